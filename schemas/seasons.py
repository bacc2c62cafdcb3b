"""A ladder's seasons: the commands an organiser (or the clock) gives and the
events they cause, in a stream of their own per ladder (``ladder_events``).

Frozen, keyword-only, tagged by ``type`` like the match events (schemas/events.py);
a type never changes, new fields get defaults. The rules that decide them live
in ``service.seasons.engine``.

A season's boundaries are *log positions*: ``at_position`` of a start or an
end is the last position of the match events when it was decided, so every
result is in a season or not by its position alone, and a recompute of the
ratings from the log places every soft reset exactly where the first run did.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, TypeAlias

import msgspec

SoftReset = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
"""How far every rating moves back towards the initial one when the season
starts: 0 keeps them, 1 starts everyone afresh."""


class _LadderEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    v: int = 1


class SeasonScheduled(_LadderEvent, frozen=True, tag="season_scheduled"):
    season_id: str
    name: str
    starts_at: datetime
    ends_at: datetime
    soft_reset: float
    organiser: str


class SeasonStarted(_LadderEvent, frozen=True, tag="season_started"):
    season_id: str
    at_position: int
    """Results after this log position are the season's (and rated after its soft reset)."""
    started_at: datetime


class SeasonEnded(_LadderEvent, frozen=True, tag="season_ended"):
    season_id: str
    at_position: int
    """Results up to this log position are the season's."""
    ended_at: datetime
    early: bool
    """Ended by an organiser before its end date."""
    by: str


class FrozenStanding(msgspec.Struct, frozen=True, kw_only=True):
    rank: int
    player_id: str
    rating: float
    rd: float | None
    """Glicko-2 only."""
    games: int
    """Rated matches in the season."""
    wins: int
    draws: int
    losses: int


class StandingsFrozen(_LadderEvent, frozen=True, tag="standings_frozen"):
    """The season's final standings, published: they never change afterwards
    (an annulment later changes the current ratings, not these)."""

    season_id: str
    at_position: int
    standings: tuple[FrozenStanding, ...]


LadderEvent: TypeAlias = SeasonScheduled | SeasonStarted | SeasonEnded | StandingsFrozen


class ScheduleSeason(msgspec.Struct, frozen=True, kw_only=True):
    season_id: str
    name: str
    starts_at: datetime
    ends_at: datetime
    soft_reset: float
    organiser: str
    now: datetime
    at_position: int = 0
    """The last log position when the command was given: a season whose start
    date has come starts at once, at this position."""


class StartSeason(msgspec.Struct, frozen=True, kw_only=True):
    season_id: str
    at_position: int
    now: datetime


class EndSeason(msgspec.Struct, frozen=True, kw_only=True):
    season_id: str
    at_position: int
    now: datetime
    by: str
    early: bool
    """An organiser ends it now; otherwise the clock, at its end date."""


class FreezeStandings(msgspec.Struct, frozen=True, kw_only=True):
    season_id: str
    standings: tuple[FrozenStanding, ...]


SeasonCommand: TypeAlias = ScheduleSeason | StartSeason | EndSeason | FreezeStandings

ladder_event_encoder = msgspec.json.Encoder()
ladder_event_decoder: msgspec.json.Decoder[LadderEvent] = msgspec.json.Decoder(LadderEvent)
