"""Seasons on a ladder over HTTP: an organiser schedules one or ends it early;
anyone lists a ladder's seasons, reads a season's standings (frozen once it has
ended) and a player's ratings within a season.

Every change is one call of the seasons core (``service.seasons.service.execute``:
fold, ``service.seasons.engine.decide``, append to the ladder's season stream
``ladder_events``); a season's start and end dates
are kept by RQ's scheduler (``enqueue_at``: ``workers.ratings.move_seasons``
runs at each date), and every ratings job of the ladder catches up on a date
that passed while no scheduled job ran.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from anyio import to_thread
from litestar import get, post
from litestar.params import Parameter
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from schemas.seasons import EndSeason, FrozenStanding, ScheduleSeason, SoftReset, StandingsFrozen
from service.accounts.guards import requires_role
from service.accounts.players import Player
from service.api.ratings import HistoryEntry, rating_history
from service.broker.jobs import RATINGS, enqueue_ladder_update, queue, redis_client
from service.errors import Forbidden, NotFound
from service.ladders import ladder_by_id
from service.seasons import engine, service
from service.seasons.standings import SEASON_ENTRIES, ranked
from service.settings import Settings
from service.store import matchlog
from service.store.ops import run_async

log = logging.getLogger("matcha.api.seasons")

SeasonName = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class SeasonBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: SeasonName
    starts_at: datetime | None = None
    """None or a past instant: the season starts now."""
    ends_at: datetime
    soft_reset: SoftReset = 0.0
    """How far every rating moves back towards the initial one at the start (0 to 1)."""


class SeasonView(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    season_id: str
    name: str
    phase: engine.SeasonPhase
    """scheduled, running, ended (standings not frozen yet) or frozen."""
    starts_at: datetime
    ends_at: datetime
    soft_reset: float
    started_at: datetime | None
    ended_at: datetime | None
    ended_early: bool
    start_position: int | None
    """The season's results are those after this log position ..."""
    end_position: int | None
    """... up to this one."""


class SeasonStandings(msgspec.Struct, frozen=True, kw_only=True):
    season: SeasonView
    frozen: bool
    """True: the final standings, published when the season ended; they never change."""
    standings: list[FrozenStanding]


class SeasonRatings(msgspec.Struct, frozen=True, kw_only=True):
    season: SeasonView
    player_id: str
    history: list[HistoryEntry]
    """The player's rated matches of the season, oldest first."""


def _view(ladder_id: str, s: engine.Season) -> SeasonView:
    return SeasonView(
        ladder_id=ladder_id,
        season_id=s.season_id,
        name=s.name,
        phase=s.phase,
        starts_at=s.starts_at,
        ends_at=s.ends_at,
        soft_reset=s.soft_reset,
        started_at=s.started_at,
        ended_at=s.ended_at,
        ended_early=s.ended_early,
        start_position=s.start_position,
        end_position=s.end_position,
    )


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


async def _may_organise(conn: AsyncConnection, ladder_id: str, player: Player) -> None:
    ladder = await ladder_by_id(conn, ladder_id)
    if ladder.created_by != player.id and not player.has("admin"):
        raise Forbidden("Only the ladder's organiser (or an admin) runs its seasons.")


def _schedule_jobs(settings: Settings, ladder_id: str, *at: datetime) -> None:
    """RQ's scheduler runs ``move_seasons`` at each date (best effort: a ratings
    job of the ladder also moves a season whose date passed)."""
    if not settings.redis.url:
        return

    try:
        q = queue(RATINGS, redis=redis_client(settings.redis.url), prefix=settings.redis.prefix)
        for when in at:
            q.enqueue_at(
                when,
                "workers.ratings.move_seasons",
                ladder_id,
                description=f"seasons of ladder {ladder_id} at {when.isoformat()}",
                meta={"kind": "seasons", "ladder_id": ladder_id},
            )
    except Exception as exc:  # Redis down: the ladder's next ratings job catches up
        log.warning("could not schedule the season jobs of %s (%s)", ladder_id, exc)


def _enqueue_ratings(settings: Settings, ladder_id: str) -> None:
    if not settings.redis.url:
        return

    try:
        enqueue_ladder_update(
            ladder_id, redis=redis_client(settings.redis.url), prefix=settings.redis.prefix
        )
    except Exception as exc:
        log.warning("could not enqueue the ratings of %s (%s)", ladder_id, exc)


@post(
    "/api/ladders/{ladder_id:str}/seasons",
    operation_id="scheduleSeason",
    tags=["seasons"],
    guards=[requires_role("organiser")],
    status_code=201,
)
async def schedule_season(
    ladder_id: str,
    data: SeasonBody,
    player: Player,
    pool: AsyncConnectionPool,
    settings: Settings,
) -> SeasonView:
    """Schedule a season (the ladder's organiser); it starts now when ``starts_at``
    is left out or past, and ends by itself at ``ends_at``."""
    now = datetime.now(UTC)
    starts_at = _utc(data.starts_at) if data.starts_at else now
    season_id = str(uuid.uuid4())
    async with pool.connection() as conn, conn.transaction():
        await _may_organise(conn, ladder_id, player)
        command = ScheduleSeason(
            season_id=season_id,
            name=data.name,
            starts_at=starts_at,
            ends_at=_utc(data.ends_at),
            soft_reset=data.soft_reset,
            organiser=player.id,
            now=now,
            at_position=await run_async(conn, matchlog.last_position()),
        )
        outcome = await run_async(conn, service.execute(ladder_id, command, actor=player.id))
    season = outcome.state.get(season_id)
    assert season is not None
    when = [season.ends_at] if season.phase == "running" else [season.starts_at, season.ends_at]
    await to_thread.run_sync(_schedule_jobs, settings, ladder_id, *when)
    if season.phase == "running":
        await to_thread.run_sync(_enqueue_ratings, settings, ladder_id)
    return _view(ladder_id, season)


@post(
    "/api/ladders/{ladder_id:str}/seasons/{season_id:str}/end",
    operation_id="endSeason",
    tags=["seasons"],
    guards=[requires_role("organiser")],
    status_code=200,
)
async def end_season(
    ladder_id: str,
    season_id: str,
    player: Player,
    pool: AsyncConnectionPool,
    settings: Settings,
) -> SeasonView:
    """End a running season now (the ladder's organiser): its standings are frozen
    and published as soon as the ratings have caught up with its last result."""
    now = datetime.now(UTC)
    async with pool.connection() as conn, conn.transaction():
        await _may_organise(conn, ladder_id, player)
        command = EndSeason(
            season_id=season_id,
            at_position=await run_async(conn, matchlog.last_position()),
            now=now,
            by=player.id,
            early=True,
        )
        outcome = await run_async(conn, service.execute(ladder_id, command, actor=player.id))
    await to_thread.run_sync(_enqueue_ratings, settings, ladder_id)
    season = outcome.state.get(season_id)
    assert season is not None
    return _view(ladder_id, season)


async def _seasons(conn: AsyncConnection, ladder_id: str) -> service.Folded:
    await ladder_by_id(conn, ladder_id)
    return await run_async(conn, service.current(ladder_id))


@get(
    "/api/ladders/{ladder_id:str}/seasons",
    operation_id="listSeasons",
    tags=["seasons"],
    security=[],
)
async def list_seasons(ladder_id: str, pool: AsyncConnectionPool) -> list[SeasonView]:
    """The ladder's seasons, in the order they were scheduled."""
    async with pool.connection() as conn:
        folded = await _seasons(conn, ladder_id)
    return [_view(ladder_id, s) for s in folded.state.seasons]


def _season_of(state: engine.Seasons, season_id: str) -> engine.Season:
    season = state.get(season_id)
    if season is None:
        raise NotFound("This ladder has no season with this id.", code="no_such_season")
    return season


@get(
    "/api/ladders/{ladder_id:str}/seasons/{season_id:str}",
    operation_id="getSeason",
    tags=["seasons"],
    security=[],
)
async def season_standings(
    ladder_id: str, season_id: str, pool: AsyncConnectionPool
) -> SeasonStandings:
    """A season and its standings: the frozen ones once it has ended, else the
    players who have played in it so far, by their rating after their last match."""
    async with pool.connection() as conn:
        folded = await _seasons(conn, ladder_id)
        season = _season_of(folded.state, season_id)
        frozen = next(
            (
                r.event
                for r in folded.rows
                if isinstance(r.event, StandingsFrozen) and r.event.season_id == season_id
            ),
            None,
        )
        if frozen is not None:
            return SeasonStandings(
                season=_view(ladder_id, season), frozen=True, standings=list(frozen.standings)
            )
        rows: list[Any] = []
        if season.start_position is not None:
            cur = await conn.execute(
                SEASON_ENTRIES,
                {
                    "ladder": ladder_id,
                    "start": season.start_position,
                    "end": season.end_position if season.end_position is not None else 2**62,
                },
            )
            rows = await cur.fetchall()
    return SeasonStandings(
        season=_view(ladder_id, season), frozen=False, standings=list(ranked(rows))
    )


@get(
    "/api/ladders/{ladder_id:str}/seasons/{season_id:str}/players/{player_id:str}/ratings",
    operation_id="playerSeasonRatings",
    tags=["seasons"],
    security=[],
)
async def player_season_ratings(
    ladder_id: str,
    season_id: str,
    player_id: str,
    pool: AsyncConnectionPool,
    limit: Annotated[int, Parameter(ge=1, le=1000)] = 1000,
) -> SeasonRatings:
    """A player's rating history within one season."""
    async with pool.connection() as conn:
        folded = await _seasons(conn, ladder_id)
        season = _season_of(folded.state, season_id)
    start = season.start_position if season.start_position is not None else 2**62
    end = season.end_position if season.end_position is not None else 2**62
    found = await rating_history(pool, ladder_id, player_id, limit=limit, positions=(start, end))
    return SeasonRatings(
        season=_view(ladder_id, season), player_id=player_id, history=found.history
    )


ROUTES = [schedule_season, end_season, list_seasons, season_standings, player_season_ratings]
