"""The admin part of a match's log: disputes, decisions, annulment.

These events are not the engine's (no rule of the game produces them), so the
re-fold skips them; this module checks that they tell a coherent story
(a dispute is filed by a player of a finished match, decided once, an
annulment follows an upheld dispute or stands alone) and lists each
dispute's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec.structs import replace

from service.audit.refold import ADMIN_TYPES
from service.audit.report import AdminCheck, DisputeState, Finding
from service.audit.rows import RawRow


def disputes(rows: Sequence[RawRow]) -> list[DisputeState]:
    """Every dispute of the match with its current state, in filing order."""
    found: dict[str, DisputeState] = {}
    for row in rows:
        d = row.data
        if row.type == "dispute_filed":
            found[str(d.get("dispute_id"))] = DisputeState(
                dispute_id=str(d.get("dispute_id")),
                match_id=row.match_id,
                seat=int(d.get("seat", -1)),
                player=str(d.get("player")),
                reason=str(d.get("reason")),
                filed_at=row.recorded_at,
                filed_version=row.version,
                state="filed",
            )
        elif row.type == "dispute_decided":
            filed = found.get(str(d.get("dispute_id")))
            if filed is not None and filed.state == "filed":
                found[filed.dispute_id] = replace(
                    filed,
                    state="upheld" if d.get("upheld") else "rejected",
                    decided_by=str(d.get("admin")),
                    decision_reason=str(d.get("reason")),
                    decided_at=row.recorded_at,
                )
    return list(found.values())


def admin_check(rows: Sequence[RawRow]) -> AdminCheck:
    players: list[Any] = []
    ended_at: int | None = None
    annulled_at: int | None = None
    filed: dict[str, RawRow] = {}
    decided: dict[str, bool] = {}
    count = 0

    def bad(row: RawRow, problem: str) -> AdminCheck:
        return AdminCheck(
            status="inconsistent",
            events=count,
            first_problem=Finding.at(row, problem=problem, logged=row.data),
        )

    for row in rows:
        d = row.data
        if annulled_at is not None and row.type not in ADMIN_TYPES:
            return bad(row, f"{row.type} logged after the annulment at version {annulled_at}")
        match row.type:
            case "match_created":
                players = list(d.get("players") or [])
            case "match_ended":
                ended_at = row.version
            case "dispute_filed":
                count += 1
                if ended_at is None:
                    return bad(row, "a dispute was filed before the match ended")
                seat = d.get("seat")
                if seat not in (0, 1) or players[seat] != d.get("player"):
                    return bad(row, "the dispute names a player who does not hold that seat")
                if row.actor != d.get("player"):
                    return bad(row, f"the dispute was recorded for {row.actor!r}, not its player")
                if d.get("dispute_id") in filed:
                    return bad(row, "a dispute with this id was already filed")
                filed[str(d.get("dispute_id"))] = row
            case "dispute_decided":
                count += 1
                dispute_id = str(d.get("dispute_id"))
                if dispute_id not in filed:
                    return bad(row, "a decision on a dispute that was never filed")
                if dispute_id in decided:
                    return bad(row, "a second decision on the same dispute")
                if row.actor != d.get("admin"):
                    return bad(row, f"the decision was recorded for {row.actor!r}, not its admin")
                decided[dispute_id] = bool(d.get("upheld"))
            case "match_annulled":
                count += 1
                if annulled_at is not None:
                    return bad(row, f"the match was already annulled at version {annulled_at}")
                cited = d.get("dispute_id")
                if cited is not None and decided.get(str(cited)) is not True:
                    return bad(row, "the annulment cites a dispute that was not upheld")
                if row.actor != d.get("admin"):
                    return bad(row, f"the annulment was recorded for {row.actor!r}, not its admin")
                annulled_at = row.version
            case _:
                pass
    return AdminCheck(status="consistent", events=count)
