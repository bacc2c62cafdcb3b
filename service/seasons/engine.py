"""The season rules of a ladder, as a Decider: ``decide`` (one ``match`` over the
commands), ``evolve`` (one ``match`` over the events), ``initial_state``. Pure.

Rules: a season has a name and an end after its start; seasons of one ladder
never overlap; at most one runs at a time; a season starts once (at or after
its start date), ends once (at its end date, or earlier by an organiser), and
its standings are frozen once, after it ended.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal

import msgspec

from schemas.seasons import (
    EndSeason,
    FreezeStandings,
    LadderEvent,
    ScheduleSeason,
    SeasonCommand,
    SeasonEnded,
    SeasonScheduled,
    SeasonStarted,
    StandingsFrozen,
    StartSeason,
)
from service.errors import Conflict, NotFound, ValidationFailed

SeasonPhase = Literal["scheduled", "running", "ended", "frozen"]


class Season(msgspec.Struct, frozen=True, kw_only=True):
    season_id: str
    name: str
    starts_at: datetime
    ends_at: datetime
    soft_reset: float
    phase: SeasonPhase = "scheduled"
    start_position: int | None = None
    end_position: int | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    ended_early: bool = False


class Seasons(msgspec.Struct, frozen=True, kw_only=True):
    """A ladder's seasons, in the order they were scheduled."""

    seasons: tuple[Season, ...] = ()

    def get(self, season_id: str) -> Season | None:
        return next((s for s in self.seasons if s.season_id == season_id), None)

    def running(self) -> Season | None:
        return next((s for s in self.seasons if s.phase == "running"), None)


def initial_state() -> Seasons:
    return Seasons()


def _season(state: Seasons, season_id: str) -> Season:
    found = state.get(season_id)
    if found is None:
        raise NotFound("This ladder has no season with this id.", code="no_such_season")
    return found


def decide(state: Seasons, command: SeasonCommand) -> list[LadderEvent]:
    match command:
        case ScheduleSeason(name=name, starts_at=starts_at, ends_at=ends_at):
            if not name.strip():
                raise ValidationFailed("A season needs a name.", code="season_name")
            if ends_at <= starts_at:
                raise ValidationFailed(
                    "A season must end after it starts (ends_at > starts_at).",
                    code="season_dates",
                )
            if ends_at <= command.now:
                raise ValidationFailed(
                    "This season's end date is in the past.", code="season_dates"
                )
            if not 0.0 <= command.soft_reset <= 1.0:
                raise ValidationFailed(
                    "soft_reset is a fraction from 0 to 1.", code="season_soft_reset"
                )
            if state.get(command.season_id) is not None:
                raise Conflict("A season with this id exists.", code="season_exists")
            for other in state.seasons:
                end = other.ended_at if other.phase in ("ended", "frozen") else other.ends_at
                if starts_at < end and other.starts_at < ends_at:  # type: ignore[operator]
                    raise Conflict(
                        f"The dates overlap season {other.name!r}.", code="season_overlap"
                    )
            scheduled = SeasonScheduled(
                season_id=command.season_id,
                name=name.strip(),
                starts_at=starts_at,
                ends_at=ends_at,
                soft_reset=command.soft_reset,
                organiser=command.organiser,
            )
            if command.now < starts_at:
                return [scheduled]
            # Its start date has come: it starts now (if no other season runs).
            start = StartSeason(
                season_id=command.season_id, at_position=command.at_position, now=command.now
            )
            return [scheduled, *decide(evolve(state, scheduled), start)]
        case StartSeason(season_id=season_id, now=now):
            season = _season(state, season_id)
            if season.phase != "scheduled":
                raise Conflict("This season has started already.", code="season_started")
            if now < season.starts_at:
                raise Conflict("This season's start date has not come yet.", code="season_not_due")
            if state.running() is not None:
                raise Conflict("Another season is running on this ladder.", code="season_running")
            return [
                SeasonStarted(season_id=season_id, at_position=command.at_position, started_at=now)
            ]
        case EndSeason(season_id=season_id, now=now, early=early):
            season = _season(state, season_id)
            if season.phase == "scheduled":
                raise Conflict("This season has not started.", code="season_not_started")
            if season.phase != "running":
                raise Conflict("This season has ended already.", code="season_ended")
            if not early and now < season.ends_at:
                raise Conflict("This season's end date has not come yet.", code="season_not_due")
            return [
                SeasonEnded(
                    season_id=season_id,
                    at_position=command.at_position,
                    ended_at=now,
                    early=early and now < season.ends_at,
                    by=command.by,
                )
            ]
        case FreezeStandings(season_id=season_id):
            season = _season(state, season_id)
            if season.phase == "frozen":
                raise Conflict(
                    "This season's standings are frozen already.", code="standings_frozen"
                )
            if season.phase != "ended" or season.end_position is None:
                raise Conflict(
                    "A season's standings are frozen once it has ended.", code="season_not_ended"
                )
            return [
                StandingsFrozen(
                    season_id=season_id,
                    at_position=season.end_position,
                    standings=command.standings,
                )
            ]


def _replace(state: Seasons, season_id: str, **changes: object) -> Seasons:
    return Seasons(
        seasons=tuple(
            msgspec.structs.replace(s, **changes) if s.season_id == season_id else s
            for s in state.seasons
        )
    )


def evolve(state: Seasons, event: LadderEvent) -> Seasons:
    match event:
        case SeasonScheduled():
            season = Season(
                season_id=event.season_id,
                name=event.name,
                starts_at=event.starts_at,
                ends_at=event.ends_at,
                soft_reset=event.soft_reset,
            )
            return Seasons(seasons=(*state.seasons, season))
        case SeasonStarted():
            return _replace(
                state,
                event.season_id,
                phase="running",
                start_position=event.at_position,
                started_at=event.started_at,
            )
        case SeasonEnded():
            return _replace(
                state,
                event.season_id,
                phase="ended",
                end_position=event.at_position,
                ended_at=event.ended_at,
                ended_early=event.early,
            )
        case StandingsFrozen():
            return _replace(state, event.season_id, phase="frozen")


def fold(events: Iterable[LadderEvent], state: Seasons | None = None) -> Seasons:
    """``events`` applied in order to ``state`` (the initial state by default)."""
    state = initial_state() if state is None else state
    for event in events:
        state = evolve(state, event)
    return state


def due(state: Seasons, now: datetime, at_position: int) -> list[StartSeason | EndSeason]:
    """What the calendar asks for at ``now``, in the order the seasons were
    scheduled: end each running season whose end date has come, start each
    scheduled one whose start date has come (``decide`` may still refuse a
    start while another season runs). ``at_position``: the log's last position."""
    moves: list[StartSeason | EndSeason] = []
    for s in state.seasons:
        if s.phase == "running" and s.ends_at <= now:
            moves.append(
                EndSeason(
                    season_id=s.season_id,
                    at_position=at_position,
                    now=now,
                    by="system",
                    early=False,
                )
            )
        elif s.phase == "scheduled" and s.starts_at <= now:
            moves.append(StartSeason(season_id=s.season_id, at_position=at_position, now=now))
    return moves


def overdue(state: Seasons, now: datetime) -> bool:
    """A season's start date has passed and it has not started, or its end date
    has passed and its standings are not frozen: a job was lost."""
    return any(
        (s.phase == "scheduled" and s.starts_at <= now)
        or (s.phase != "frozen" and s.ends_at <= now)
        for s in state.seasons
    )


def to_freeze(state: Seasons, high: int) -> list[Season]:
    """Ended seasons whose standings may be frozen once the ratings have applied
    the log up to ``high``: their end is at or below it (every rating period of
    the season is closed then, so the history up to the end is final)."""
    return [
        s
        for s in state.seasons
        if s.phase == "ended"
        and s.end_position is not None
        and s.start_position is not None
        and s.end_position <= high
    ]


def boundaries(history: Iterable[tuple[int, LadderEvent]]) -> list[tuple[int, float | None, int]]:
    """Where the ratings fold closes its periods, in log order, from the stream's
    ``(version, event)``: ``(position, the soft reset of a start or None for an
    end, the stream version that placed it)``; a start sorts after an end at the
    same position."""
    resets: dict[str, float] = {}
    marks: list[tuple[int, int, float | None, int]] = []
    for version, event in history:
        match event:
            case SeasonScheduled():
                resets[event.season_id] = event.soft_reset
            case SeasonStarted():
                marks.append((event.at_position, 1, resets[event.season_id], version))
            case SeasonEnded():
                marks.append((event.at_position, 0, None, version))
            case StandingsFrozen():
                pass
    return [(position, fraction, version) for position, _, fraction, version in sorted(marks)]
