"""Many matches written at once, past the store: one ``COPY`` of chained rows.

For the benchmarks and test fixtures that load thousands of self-played matches
(an append per match would take minutes). The rows are chained exactly as
``EventStore.append`` chains them (``chain.row_hash``) but carry no signature:
the audit treats them as it treats rows from before signatures, so use this only
on databases made for a benchmark or a test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from schemas.events import Event, encode_event
from service.store.chain import GENESIS_HASH, row_hash

EVENTS_COPY: Final = (
    "COPY events (match_id, version, type, data, actor, recorded_at, prev_hash, hash) FROM STDIN"
)
"""The ``COPY`` statement ``copy_log`` writes into (``cursor.copy(EVENTS_COPY)``)."""


def copy_log(
    copy: Any,
    match_id: str,
    log: Sequence[Event],
    times: Iterable[datetime],
    *,
    actor: str = "system",
) -> bytes:
    """Write ``log`` as versions 1.. of ``match_id``, each recorded at the next of
    ``times``, into an open ``COPY`` (``EVENTS_COPY``); the head's hash."""
    prev = GENESIS_HASH
    for version, (event, at) in enumerate(zip(log, times, strict=False), start=1):
        data = encode_event(event)
        h = row_hash(
            prev, match_id=match_id, version=version, actor=actor, recorded_at=at, event_bytes=data
        )
        tag = type(event).__struct_config__.tag
        copy.write_row((match_id, version, tag, data.decode(), actor, at, prev, h))
        prev = h
    return prev
