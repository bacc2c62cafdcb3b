"""Reading the global log after a position, the way ``EventStore.read_all`` does.

The runners are blocking code (psycopg's sync API, like the RQ jobs), so this
is the store's ``read_all`` contract on a blocking connection: first a
position ``H`` such that every event at or below it has committed or never
will (``workers.db.committed_high``: the same barrier on ``APPEND_LOCK_KEY``
that ``read_all`` takes), then only rows at or below ``H``. A runner that
records the last position it read therefore never skips an event that
commits late (docs/event-store.md, "Global order").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from schemas.events import EVENT_TYPES
from workers.db import committed_high

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

END_TYPES: tuple[str, ...] = ("match_ended", "match_annulled")
"""Events that change a ladder's ratings."""

AFTER_PLAY_TYPES: tuple[str, ...] = tuple(t for t in ALL_TYPES if t not in PLAY_TYPES)
"""The end and everything that may follow it (disputes, decisions, annulments):
each changes the match's archive. A type added later counts here unless it is
listed as a play type, so a new kind of after-the-end event is never missed."""


def sequence_high(conn: psycopg.Connection[Any]) -> int:
    """The last position handed out (committed or not): cheap, no barrier."""
    row = conn.execute(
        "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM events_position_seq"
    ).fetchone()
    return int(row[0]) if row else 0


def events_after(
    conn: psycopg.Connection[Any],
    after: int,
    high: int,
    types: Sequence[str],
    limit: int,
) -> list[tuple[int, str]]:
    """(position, match id) of the events of ``types`` in ``(after, high]``, in
    position order, at most ``limit``. ``high`` must come from ``committed_high``."""
    rows = conn.execute(
        "SELECT position, match_id FROM events"
        " WHERE type = ANY(%s) AND position > %s AND position <= %s"
        " ORDER BY position LIMIT %s",
        (list(types), after, high, limit),
    ).fetchall()
    return [(int(p), str(m)) for p, m in rows]


__all__ = [
    "AFTER_PLAY_TYPES",
    "ALL_TYPES",
    "END_TYPES",
    "PLAY_TYPES",
    "committed_high",
    "events_after",
    "sequence_high",
]
