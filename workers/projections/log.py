"""Which events each projection runner follows.

The runners read the log through the store's one reader
(``service.store.matchlog``), on a blocking connection (``service.store.ops.run``):
first a position ``H`` such that every event at or below it has committed or
never will (``matchlog.committed_high``, the barrier), then only rows at or
below ``H`` (``matchlog.moved_between``). A runner that records the last
position it read therefore never skips an event that commits late
(docs/event-store.md, "Global order").
"""

from __future__ import annotations

from schemas.events import EVENT_TYPES
from service.store.matchlog import END_TYPES

ALL_TYPES: tuple[str, ...] = tuple(str(t.__struct_config__.tag) for t in EVENT_TYPES)

PLAY_TYPES = frozenset(
    {
        "match_created",
        "hand_dealt",
        "card_played",
        "passed",
        "round_revealed",
        "hand_ended",
        "cards_kept",
    }
)
"""Events of a match being played: they change no archive and no rating."""

AFTER_PLAY_TYPES: tuple[str, ...] = tuple(t for t in ALL_TYPES if t not in PLAY_TYPES)
"""The end and everything that may follow it (disputes, decisions, annulments):
each changes the match's archive. A type added later counts here unless it is
listed as a play type, so a new kind of after-the-end event is never missed."""


__all__ = ["AFTER_PLAY_TYPES", "ALL_TYPES", "END_TYPES", "PLAY_TYPES"]
