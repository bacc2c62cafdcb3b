"""A ladder's season stream, ``ladder_events``: one ``service.store.stream.Stream``.

Hash-chained like the match events, with ``service.store.chain.row_hash`` (the
stream id ``ladder:<id>`` in the place of the match id, so a ladder's chain
can never be mistaken for a match's); ``(ladder_id, version)`` is unique, so of
two racing appends one gets ``VersionConflict`` and writes nothing. The
workers (blocking) and the API (async) run the same operations
(``service.store.ops.run`` / ``run_async``).
"""

from __future__ import annotations

from typing import Final, TypeAlias

from schemas.seasons import LadderEvent, ladder_event_decoder, ladder_event_encoder
from service.store.chain import tag_of
from service.store.ops import Op
from service.store.stream import Stored, Stream, plain_row

LADDER_LOCK_KEY: Final = 0x6D61746368610011
"""The season streams' barrier (``Stream.committed_high``)."""

StoredLadderEvent: TypeAlias = Stored[LadderEvent]


def stream_id(ladder_id: str) -> str:
    """The id a ladder's season stream hashes into its chain."""
    return f"ladder:{ladder_id}"


LADDER_EVENTS: Stream[LadderEvent, StoredLadderEvent] = Stream(
    label="the season stream of ladder",
    table="ladder_events",
    id_column="ladder_id",
    lock_key=LADDER_LOCK_KEY,
    encode=ladder_event_encoder.encode,
    decode=ladder_event_decoder.decode,
    type_of=tag_of,
    row=plain_row,
    chain_id=stream_id,
)

READ_PAGE = 1_000


def every_row() -> Op[list[StoredLadderEvent]]:
    """Every committed row of every ladder's season stream, in position order
    (seasons are few: a handful of rows per season)."""
    rows: list[StoredLadderEvent] = []
    while page := (
        yield from LADDER_EVENTS.read_after(rows[-1].position if rows else 0, limit=READ_PAGE)
    ):
        rows += page
        if len(page) < READ_PAGE:
            break
    return rows
