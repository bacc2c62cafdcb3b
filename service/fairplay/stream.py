"""The admins' fair-play decisions, ``fairplay_events``: one ``Stream`` with one
stream id (decisions are rare; one chain orders them all)."""

from __future__ import annotations

from typing import Final, TypeAlias

from schemas.fairplay import FairPlayEvent, fairplay_event_decoder, fairplay_event_encoder
from service.store.chain import tag_of
from service.store.ops import Op
from service.store.stream import Stored, Stream, plain_row

FAIRPLAY_LOCK_KEY: Final = 0x6D61746368610028
"""The decisions stream's barrier (``Stream.committed_high``)."""

STREAM_ID: Final = "fairplay"

StoredDecision: TypeAlias = Stored[FairPlayEvent]


FAIRPLAY_EVENTS: Stream[FairPlayEvent, StoredDecision] = Stream(
    label="the fair-play decisions",
    table="fairplay_events",
    id_column="stream_id",
    lock_key=FAIRPLAY_LOCK_KEY,
    encode=fairplay_event_encoder.encode,
    decode=fairplay_event_decoder.decode,
    type_of=tag_of,
    row=plain_row,
    chain_id=lambda stream_id: f"fairplay:{stream_id}",
)


def every_decision() -> Op[list[StoredDecision]]:
    """Every decision, oldest first."""
    return (yield from FAIRPLAY_EVENTS.load(STREAM_ID))
