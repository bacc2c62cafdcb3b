"""Timing: how long each seat took over each move, and the long silences.

A move's time runs from the event that put the move up to its seat: for a
card or a pass, the event just before it; for a keep, the hand's end (both
seats choose at once, so the other seat's keep does not restart the clock).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from schemas.cards import Seat
from schemas.clocks import Clocks
from schemas.events import MatchEnded
from service.audit.refold import decode
from service.audit.report import Gap, MoveTime, SeatTime, Timing
from service.audit.rows import RawRow
from service.engine import clock, initial_state
from service.engine.evolve import evolve

DEFAULT_GAP_S = 120.0

_MOVES = {"card_played", "passed", "cards_kept"}


def _move_seat(row: RawRow) -> int | None:
    data = row.data
    if row.type == "passed" and data.get("automatic"):
        return None
    if row.type in _MOVES:
        seat = data.get("seat")
        return seat if isinstance(seat, int) else None
    if row.type == "match_ended" and data.get("reason") == "resigned":
        winner = data.get("winner")
        return 1 - winner if isinstance(winner, int) else None
    return None


def timing(
    rows: Sequence[RawRow],
    players: Sequence[str],
    *,
    gap_threshold_s: float = DEFAULT_GAP_S,
    disconnections: list[dict[str, Any]] | Literal["not recorded"] = "not recorded",
) -> Timing:
    moves: list[MoveTime] = []
    gaps: list[Gap] = []
    hand_ended_at = None
    for i, row in enumerate(rows):
        if row.type == "hand_ended":
            hand_ended_at = row.recorded_at
        if i == 0:
            continue
        prev = rows[i - 1]
        delta = (row.recorded_at - prev.recorded_at).total_seconds()
        if delta > gap_threshold_s:
            gaps.append(Gap(after_version=prev.version, version=row.version, seconds=delta))
        seat = _move_seat(row)
        if seat is None:
            continue
        start = hand_ended_at if row.type == "cards_kept" and hand_ended_at else prev.recorded_at
        moves.append(
            MoveTime(
                version=row.version,
                seat=seat,
                move="resigned" if row.type == "match_ended" else row.type,
                seconds=(row.recorded_at - start).total_seconds(),
            )
        )
    seats = []
    for seat, player in enumerate(players):
        took = [m.seconds for m in moves if m.seat == seat]
        seats.append(
            SeatTime(
                seat=seat,
                player=player,
                moves=len(took),
                total_s=sum(took, 0.0),
                mean_s=sum(took) / len(took) if took else 0.0,
                max_s=max(took, default=0.0),
            )
        )
    try:
        shown, early = _clocks(rows)
    except Exception:  # a forged log may not even fold: the re-fold check names where
        shown, early = None, []
    return Timing(
        moves=moves,
        seats=seats,
        gap_threshold_s=gap_threshold_s,
        long_gaps=gaps,
        disconnections=disconnections,
        clocks=shown,
        early_time_outs=early,
    )


def _clocks(rows: Sequence[RawRow]) -> tuple[Clocks | None, list[int]]:
    """The clocks at the last event, by the engine's one clock function, and each
    time-out the clock did not justify (a seat timed out before its time ran out)."""
    state = initial_state()
    early: list[int] = []
    for row in rows:
        event = decode(row)
        if event is None:
            return None, early
        timed_out = isinstance(event, MatchEnded) and event.reason in ("timeout", "aborted")
        if timed_out and state.clock is not None:
            assert isinstance(event, MatchEnded)
            losers: tuple[Seat, ...] = (0, 1)
            if event.reason == "timeout" and event.winner is not None:
                losers = (1 if event.winner == 0 else 0,)
            if not any(clock.expired(state, seat, row.recorded_at) for seat in losers):
                early.append(row.version)
        state = evolve(state, event, row.recorded_at)
    if state.clock is None or not rows:
        return None, early
    return clock.clocks(state, rows[-1].recorded_at), early
