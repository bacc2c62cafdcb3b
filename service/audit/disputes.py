"""Reading a match's disputes: who filed what, and what was decided.

Disputes, decisions and annulments are commands of the match core
(``MatchCore.file_dispute``, ``decide_dispute``, ``annul``), decided by the
engine like every other command: this module only reads their events back
into ``DisputeState`` rows, as the audit report shows them.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.audit.admin_events import disputes as dispute_states
from service.audit.refold import as_json
from service.audit.report import DisputeState
from service.audit.rows import RawRow
from service.store import StoredEvent


def _rows(events: Sequence[StoredEvent]) -> list[RawRow]:
    """Stored events as the audit's rows, to share one reading of dispute states."""
    return [
        RawRow(
            position=e.position,
            match_id=e.match_id,
            version=e.version,
            type=e.type,
            data=as_json(e.event),
            actor=e.actor,
            recorded_at=e.recorded_at,
            prev_hash=e.prev_hash,
            hash=e.hash,
        )
        for e in events
    ]


def disputes_seen_by(
    events: Sequence[StoredEvent], *, player_id: str, admin: bool
) -> list[DisputeState]:
    """The match's disputes: all of them for an admin, else the player's own."""
    found = dispute_states(_rows(events))
    if admin:
        return found
    return [d for d in found if d.player == player_id]
