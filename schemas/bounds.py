"""The range of every integer a client may send, in one place (docs/api.md "Ranges").

Each range fits where the number is stored or used: a match's version and a
tournament's round are PostgreSQL ``integer`` columns (32-bit), so anything
past ``INT32_MAX`` could never name a stored row and would overflow the query.
The edge refuses a number out of its range with a 400 that names the field
(msgspec ``Meta`` in bodies and socket messages; the same bounds as Litestar
parameter constraints, ``Parameter(ge=0, le=INT32_MAX)``, in paths and queries).
What the rules allow inside that range (a Swiss of 1 to 50 rounds, say) is the
engine's answer, as ever: these bounds only keep numbers the store cannot hold
away from it.

``tests/api/test_bounds_at_the_edge.py`` walks every route of the app and every
socket message and fails on an integer without both bounds.
"""

from typing import Annotated, Final

import msgspec

INT32_MAX: Final = 2**31 - 1
"""The largest PostgreSQL ``integer``: versions, rounds, counts, seconds columns."""

Version = Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)]
"""A match's version (``events.version``): 1 (its creation) to ``INT32_MAX``.

(Why not from 0: Litestar's OpenAPI generator drops a bound of 0 on an optional
field, ``if value := meta.ge``; every optional integer here starts at 1.)"""

Count = Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)]
"""A non-negative count, offset or number of seconds stored as ``integer``."""

Positive = Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)]
"""A 1-based number stored as ``integer`` (a round, a frame, a receipt's version)."""

__all__ = ["INT32_MAX", "Count", "Positive", "Version"]
