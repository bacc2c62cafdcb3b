"""Ladder ratings over HTTP: leaderboard, a player's history, standings as CSV,
the admin recompute (an RQ job) and job status.

The tables are the ratings projection (migration 0003, workers/ratings.py).
Reads never compute a rating: they show what the workers last committed, with
the log position it includes (``position``), so a client can tell how fresh it is.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from anyio import to_thread
from litestar import Response, get, post
from litestar.params import Parameter
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from schemas.bounds import INT32_MAX
from service.accounts.guards import requires_role
from service.broker.jobs import enqueue_ladder_update, fetch_job, redis_client
from service.errors import MatchaError, NotFound, Unavailable, ValidationFailed
from service.fairplay.ladder import refunds_of_player
from service.fairplay.refunds import Refund
from service.ratings.elo import expected_score as elo_expected
from service.ratings.glicko2 import Glicko2Settings, entering_phi, rd_of
from service.ratings.glicko2 import expected_score as glicko2_expected
from service.ratings.settings import RatingSettings, settings_from_json
from service.settings import Settings
from service.store.ops import run_async

TREND_GAMES = 5
"""How many of a player's latest rating changes the leaderboard shows."""
TREND_ENTRIES = 60
"""History entries read for the trend: on a Glicko-2 ladder several share a period."""


class QueueUnavailable(Unavailable):
    default_code: ClassVar[str] = "queue_unavailable"


System = Literal["elo", "glicko2"]


class Standing(msgspec.Struct, frozen=True, kw_only=True):
    rank: int
    player_id: str
    name: str | None
    system: System
    rating: float
    """Exact; display it rounded."""
    rd: float | None
    """Glicko-2: the rating deviation now (it grows while the player does not play)."""
    interval: tuple[float, float] | None
    """Glicko-2: rating - 2 RD, rating + 2 RD (the 95 % interval)."""
    games: int
    wins: int
    draws: int
    losses: int
    timeouts: int
    """Matches this player lost on time (among ``losses``)."""
    provisional: bool
    """Elo: fewer games than the ladder's provisional games (30); Glicko-2: RD above
    the ladder's threshold (110). The rating still moves fast."""
    peak: float
    reached_master: bool
    trend: list[float]
    """The latest rating changes, oldest first (up to 5; Glicko-2: one per rating period)."""


class Leaderboard(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    system: System
    position: int
    """The last global event position these ratings include (0: never rated)."""
    matches: int
    updated_at: datetime | None
    players: int
    standings: list[Standing]


class HistoryEntry(msgspec.Struct, frozen=True, kw_only=True):
    game: int
    match_id: str
    position: int
    opponent_id: str
    opponent_name: str | None
    result: Literal["win", "draw", "loss"]
    score: float
    before: float
    after: float
    change: float
    rd_before: float | None
    rd_after: float | None
    """Glicko-2: the RD entering and leaving the match's rating period."""
    period: int | None
    """Glicko-2: the rating period (every match of one period shares before and after)."""
    reason: str | None
    """How the match ended (``timeout``: a loss on time)."""


class Expected(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    system: System
    a: str
    b: str
    expected_a: float
    """The score ``a`` expects against ``b`` (1 a win, 0.5 a draw), from today's ratings."""
    expected_b: float


class PlayerRatings(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    player_id: str
    name: str | None
    system: System
    rating: float | None
    """None: no rated match on this ladder yet (they stand at the ladder's initial rating)."""
    rd: float | None
    interval: tuple[float, float] | None
    games: int
    provisional: bool
    history: list[HistoryEntry]
    refunds: list[Refund] = []
    """Rating given back because an opponent was closed for fair play (reason
    "refund: opponent closed for fair play"; docs/fairplay.md "Refunds")."""


class JobAccepted(msgspec.Struct, frozen=True, kw_only=True):
    job_id: str
    status_url: str


class JobStatus(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    status: str
    """queued, started, finished, failed, ..."""
    description: str | None
    progress: dict[str, Any] | None
    """``{"phase", "done", "total"}`` while a recompute runs."""
    result: Any
    """What the job returned (null until it finished). ``Any``, not ``Any | None``:
    null is already any value, and the union made null match two schemas at once."""
    error: str | None
    enqueued_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None


async def _ladder_settings(conn: AsyncConnection, ladder_id: str) -> RatingSettings:
    cur = await conn.execute("SELECT rating FROM ladders WHERE id = %s", (ladder_id,))
    row = await cur.fetchone()
    if row is None:
        raise NotFound("No ladder has this id.")
    return settings_from_json(row[0])


def _system(settings: RatingSettings) -> System:
    return "glicko2" if isinstance(settings, Glicko2Settings) else "elo"


def current_rd(
    settings: Glicko2Settings,
    rd: float,
    volatility: float,
    period: int | None,
    now: datetime | None = None,
) -> float:
    """The RD a player would enter the current rating period with: their stored
    RD grown by the whole periods since their last one (glicko2.entering_phi)."""
    if period is None:
        return rd
    now = now or datetime.now(UTC)
    now_period = (now - _EPOCH) // timedelta(microseconds=1) // settings.period_us
    return rd_of(entering_phi(rd, volatility, int(now_period) - period - 1, settings.max_rd))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_STANDINGS_SQL = f"""
SELECT r.player_id, p.name, r.rating, r.games, r.wins, r.draws, r.losses, r.provisional,
       r.peak, r.reached_master,
       h.after[greatest(cardinality(h.after) - {TREND_ENTRIES - 1}, 1):],
       h.before[greatest(cardinality(h.before) - {TREND_ENTRIES - 1}, 1):],
       h.periods[greatest(cardinality(h.periods) - {TREND_ENTRIES - 1}, 1):],
       r.timeouts, r.rd, r.volatility, r.period
FROM ratings r
LEFT JOIN players p ON p.id = r.player_id
LEFT JOIN rating_histories h ON h.ladder_id = r.ladder_id AND h.player_id = r.player_id
WHERE r.ladder_id = %s
ORDER BY r.rating DESC, r.player_id
LIMIT %s OFFSET %s
"""


def _trend(afters: list[float], befores: list[float], periods: list[int] | None) -> list[float]:
    """The latest changes: one per match (Elo) or per rating period (Glicko-2)."""
    if periods is None:
        return [a - b for a, b in zip(afters, befores, strict=True)][-TREND_GAMES:]
    changes: list[float] = []
    last = None
    for a, b, period in zip(afters, befores, periods, strict=True):
        if period != last:
            changes.append(a - b)
        last = period
    return changes[-TREND_GAMES:]


def _uncertainty(
    settings: RatingSettings,
    rating: float,
    rd: float | None,
    volatility: float | None,
    period: int | None,
    provisional: bool,
) -> tuple[float | None, tuple[float, float] | None, bool]:
    """``(RD now, rating ± 2 RD, provisional)`` of a stored row."""
    if not isinstance(settings, Glicko2Settings) or rd is None or volatility is None:
        return None, None, provisional
    now_rd = current_rd(settings, rd, volatility, period)
    return now_rd, (rating - 2 * now_rd, rating + 2 * now_rd), now_rd > settings.provisional_rd


async def standings(
    conn: AsyncConnection,
    ladder_id: str,
    *,
    limit: int | None = None,
    offset: int = 0,
    settings: RatingSettings | None = None,
) -> list[Standing]:
    settings = settings or await _ladder_settings(conn, ladder_id)
    system = _system(settings)
    cur = await conn.execute(_STANDINGS_SQL, (ladder_id, limit, offset))
    out = []
    for i, r in enumerate(await cur.fetchall(), start=1):
        rd, interval, provisional = _uncertainty(settings, r[2], r[14], r[15], r[16], r[7])
        out.append(
            Standing(
                rank=offset + i,
                player_id=r[0],
                name=r[1],
                system=system,
                rating=r[2],
                rd=rd,
                interval=interval,
                games=r[3],
                wins=r[4],
                draws=r[5],
                losses=r[6],
                timeouts=r[13],
                provisional=provisional,
                peak=max(r[8], r[2]),
                reached_master=r[9],
                trend=_trend(r[10] or [], r[11] or [], r[12]),
            )
        )
    return out


@get(
    "/api/ladders/{ladder_id:str}/leaderboard",
    operation_id="ladderLeaderboard",
    tags=["ratings"],
    security=[],
)
async def leaderboard(
    ladder_id: str,
    pool: AsyncConnectionPool,
    limit: Annotated[int, Parameter(ge=1, le=1000)] = 100,
    offset: Annotated[int, Parameter(ge=0, le=INT32_MAX)] = 0,
) -> Leaderboard:
    """The ladder's players best first: rating (± 2 RD on Glicko-2), games, W/D/L,
    losses on time, recent trend, provisional mark."""
    async with pool.connection() as conn:
        settings = await _ladder_settings(conn, ladder_id)
        cur = await conn.execute(
            "SELECT position, matches, updated_at FROM ladder_projections WHERE ladder_id = %s",
            (ladder_id,),
        )
        row = await cur.fetchone()
        cur = await conn.execute("SELECT count(*) FROM ratings WHERE ladder_id = %s", (ladder_id,))
        count = await cur.fetchone()
        rows = await standings(conn, ladder_id, limit=limit, offset=offset, settings=settings)
    return Leaderboard(
        ladder_id=ladder_id,
        system=_system(settings),
        position=row[0] if row else 0,
        matches=row[1] if row else 0,
        updated_at=row[2] if row else None,
        players=int(count[0]) if count else 0,
        standings=rows,
    )


@get(
    "/api/ladders/{ladder_id:str}/players/{player_id:str}/ratings",
    operation_id="playerRatingHistory",
    tags=["ratings"],
    security=[],
)
async def player_ratings(
    ladder_id: str,
    player_id: str,
    pool: AsyncConnectionPool,
    limit: Annotated[int, Parameter(ge=1, le=1000)] = 100,
    after_game: Annotated[int, Parameter(ge=0, le=INT32_MAX)] = 0,
) -> PlayerRatings:
    """A player's rating history on a ladder: before, after and change per match, oldest first."""
    return await rating_history(pool, ladder_id, player_id, limit=limit, after_game=after_game)


async def rating_history(
    pool: AsyncConnectionPool,
    ladder_id: str,
    player_id: str,
    *,
    limit: int | None = None,
    after_game: int = 0,
    positions: tuple[int, int] | None = None,
) -> PlayerRatings:
    """A player's rating and history (``positions``: only matches in ``(lo, hi]``)."""
    lo, hi = positions or (0, 2**62)
    async with pool.connection() as conn:
        settings = await _ladder_settings(conn, ladder_id)
        named = await _player_name(conn, player_id)
        cur = await conn.execute(
            "SELECT rating, games, provisional, rd, volatility, period FROM ratings"
            " WHERE ladder_id = %s AND player_id = %s",
            (ladder_id, player_id),
        )
        current = await cur.fetchone()
        cur = await conn.execute(
            """SELECT h.game, h.match_id, h.position, h.opponent_id, p.name, h.score,
                      h.before, h.after, h.change, h.rd_before, h.rd_after, h.period, h.reason
               FROM rating_history h LEFT JOIN players p ON p.id = h.opponent_id
               WHERE h.ladder_id = %s AND h.player_id = %s AND h.game > %s
                 AND h.position > %s AND h.position <= %s
               ORDER BY h.game LIMIT %s""",
            (ladder_id, player_id, after_game, lo, hi, limit),
        )
        rows = await cur.fetchall()
        refunds = [
            r
            for r in await run_async(conn, refunds_of_player(player_id))
            if r.ladder_id == ladder_id
        ]
    rd, interval, provisional = (
        _uncertainty(settings, current[0], current[3], current[4], current[5], current[2])
        if current
        else (None, None, True)
    )
    return PlayerRatings(
        ladder_id=ladder_id,
        player_id=player_id,
        name=named,
        system=_system(settings),
        rating=current[0] if current else None,
        rd=rd,
        interval=interval,
        games=current[1] if current else 0,
        provisional=provisional,
        history=[
            HistoryEntry(
                game=r[0],
                match_id=r[1],
                position=r[2],
                opponent_id=r[3],
                opponent_name=r[4],
                result="win" if r[5] == 1 else ("loss" if r[5] == 0 else "draw"),
                score=r[5],
                before=r[6],
                after=r[7],
                change=r[8],
                rd_before=r[9],
                rd_after=r[10],
                period=r[11],
                reason=r[12],
            )
            for r in rows
        ],
        refunds=refunds,
    )


async def _player_name(conn: AsyncConnection, player_id: str) -> str:
    cur = await conn.execute("SELECT name FROM players WHERE id = %s", (player_id,))
    named = await cur.fetchone()
    if named is None:
        raise NotFound(f"No player has the id {player_id!r}.")
    return str(named[0])


@get(
    "/api/ladders/{ladder_id:str}/expected",
    operation_id="expectedScore",
    tags=["ratings"],
    security=[],
)
async def expected(
    ladder_id: str,
    pool: AsyncConnectionPool,
    a: Annotated[str, Parameter(min_length=1, max_length=200)],
    b: Annotated[str, Parameter(min_length=1, max_length=200)],
) -> Expected:
    """The score each of two players expects before a match between them, from
    their ratings now (Elo: the difference capped; Glicko-2: both RDs counted)."""
    if a == b:
        raise ValidationFailed("a and b must be two different players.", code="same_player")
    async with pool.connection() as conn:
        settings = await _ladder_settings(conn, ladder_id)
        for player in (a, b):
            await _player_name(conn, player)
        cur = await conn.execute(
            "SELECT player_id, rating, rd, volatility, period FROM ratings"
            " WHERE ladder_id = %s AND player_id = ANY(%s)",
            (ladder_id, [a, b]),
        )
        found = {r[0]: r[1:] for r in await cur.fetchall()}
    if isinstance(settings, Glicko2Settings):
        fresh = (settings.initial, settings.initial_rd, settings.initial_volatility, None)
        (ra, rda, va, pa), (rb, rdb, vb, pb) = (found.get(a, fresh), found.get(b, fresh))
        now_a = current_rd(settings, rda, va, pa)
        now_b = current_rd(settings, rdb, vb, pb)
        e_a = glicko2_expected(ra, now_a, rb, now_b)
        e_b = glicko2_expected(rb, now_b, ra, now_a)
    else:
        ra = found[a][0] if a in found else settings.initial
        rb = found[b][0] if b in found else settings.initial
        e_a = elo_expected(ra, rb, settings.max_difference)
        e_b = elo_expected(rb, ra, settings.max_difference)
    return Expected(
        ladder_id=ladder_id, system=_system(settings), a=a, b=b, expected_a=e_a, expected_b=e_b
    )


@get(
    "/api/ladders/{ladder_id:str}/standings.csv",
    operation_id="ladderStandingsCsv",
    tags=["ratings"],
    security=[],
    media_type="text/csv",
)
async def standings_csv(ladder_id: str, pool: AsyncConnectionPool) -> Response[str]:
    """The whole leaderboard as CSV (ratings rounded to 0.1)."""
    async with pool.connection() as conn:
        rows = await standings(conn, ladder_id)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "rank",
            "player_id",
            "name",
            "rating",
            "games",
            "wins",
            "draws",
            "losses",
            "provisional",
            "peak",
            "rd",
            "timeouts",
        ]
    )
    for s in rows:
        writer.writerow(
            [
                s.rank,
                s.player_id,
                s.name or "",
                f"{s.rating:.1f}",
                s.games,
                s.wins,
                s.draws,
                s.losses,
                "yes" if s.provisional else "no",
                f"{s.peak:.1f}",
                "" if s.rd is None else f"{s.rd:.1f}",
                s.timeouts,
            ]
        )
    return Response(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{ladder_id}-standings.csv"'},
    )


def _redis(settings: Settings) -> Any:

    if not settings.redis.url:
        raise QueueUnavailable("The job queue is not configured (REDIS_URL).")
    return redis_client(settings.redis.url)


@post(
    "/api/admin/ladders/{ladder_id:str}/recompute",
    operation_id="recomputeLadder",
    tags=["admin", "ratings"],
    guards=[requires_role("admin")],
    status_code=202,
)
async def recompute(ladder_id: str, pool: AsyncConnectionPool, settings: Settings) -> JobAccepted:
    """Rebuild the ladder's ratings from the event log, as a job; poll its status URL."""

    async with pool.connection() as conn:
        await _ladder_settings(conn, ladder_id)

    def enqueue() -> str:
        job = enqueue_ladder_update(
            ladder_id, full=True, redis=_redis(settings), prefix=settings.redis.prefix
        )
        return str(job.id)

    try:
        job_id = await to_thread.run_sync(enqueue)
    except MatchaError:
        raise
    except Exception as exc:  # Redis down: say so, do not pretend it was queued
        raise QueueUnavailable(f"The job queue is unreachable ({type(exc).__name__}).") from exc
    return JobAccepted(job_id=job_id, status_url=f"/api/jobs/{job_id}")


@get(
    "/api/jobs/{job_id:str}",
    operation_id="getJob",
    tags=["admin"],
    guards=[requires_role("organiser")],
)
async def job_status(job_id: str, settings: Settings) -> JobStatus:
    """A worker job's status and progress (organisers and admins)."""

    def read() -> JobStatus | None:
        job = fetch_job(job_id, redis=_redis(settings), prefix=settings.redis.prefix)
        if job is None:
            return None
        status = job.get_status(refresh=True)
        result = job.return_value() if status == "finished" else None
        error = None
        if status == "failed":
            latest = job.latest_result()
            text = getattr(latest, "exc_string", None) or ""
            error = text.strip().splitlines()[-1] if text.strip() else "failed"
        return JobStatus(
            id=job.id,
            status=str(status.value if hasattr(status, "value") else status),
            description=job.description,
            progress=job.get_meta(refresh=True).get("progress"),
            result=result,
            error=error,
            enqueued_at=job.enqueued_at,
            started_at=job.started_at,
            ended_at=job.ended_at,
        )

    try:
        found = await to_thread.run_sync(read)
    except MatchaError:
        raise
    except Exception as exc:
        raise QueueUnavailable(f"The job queue is unreachable ({type(exc).__name__}).") from exc
    if found is None:
        raise NotFound("No job has this id (finished jobs are kept for a week).")
    return found


ROUTES = [leaderboard, player_ratings, expected, standings_csv, recompute, job_status]
