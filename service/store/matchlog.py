"""The one reader of the match log (``events``) for projections, the CLI and the API.

Every read of the ``events`` table outside the store goes through here, so the
table's columns, its JSON paths (``data ->> 'ladder_id'``) and its indexes are
known in one module; tests/store/test_one_reader_of_the_log.py fails on
a new raw read elsewhere. Each read is an ``Op`` (``service.store.ops``): a
worker runs it with ``run(conn, op)``, the API with ``await run_async(conn, op)``.
"""

from __future__ import annotations

from service.store.events import MATCH_EVENTS
from service.store.ops import Op


def last_position() -> Op[int]:
    """The last position handed out in the match log, committed or not (no barrier:
    cheap). A season boundary's ``at_position``; a projection's lag."""
    return (yield from MATCH_EVENTS.last_position())


def committed_high() -> Op[int]:
    """A position ``H`` such that every event at or below it has committed or never
    will (the match log's barrier: ``service.store.stream``). Rows at or below it,
    read by later statements, are final."""
    return (yield from MATCH_EVENTS.committed_high())
