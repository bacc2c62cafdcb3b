"""Ladder ratings over HTTP: leaderboard, a player's history, standings as CSV,
the admin recompute (an RQ job) and job status.

The tables are the ratings projection (migration 0003, workers/ratings.py).
Reads never compute a rating: they show what the workers last committed, with
the log position it includes (``position``), so a client can tell how fresh it is.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from anyio import to_thread
from litestar import Response, get, post
from litestar.params import Parameter
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from service.api.deps import requires_role
from service.errors import MatchaError, NotFound, Unavailable
from service.settings import Settings

TREND_GAMES = 5
"""How many of a player's latest rating changes the leaderboard shows."""


class QueueUnavailable(Unavailable):
    default_code: ClassVar[str] = "queue_unavailable"


class Standing(msgspec.Struct, frozen=True, kw_only=True):
    rank: int
    player_id: str
    name: str | None
    rating: float
    """Exact; display it rounded."""
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool
    """Fewer than the ladder's provisional games (30): the rating still moves fast."""
    peak: float
    reached_master: bool
    trend: list[float]
    """The latest rating changes, oldest first (up to 5)."""


class Leaderboard(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
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


class PlayerRatings(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    player_id: str
    name: str | None
    rating: float | None
    """None: no rated match on this ladder yet (they stand at the ladder's initial rating)."""
    games: int
    provisional: bool
    history: list[HistoryEntry]


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
    result: Any | None
    error: str | None
    enqueued_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None


async def _ladder_exists(conn: AsyncConnection, ladder_id: str) -> None:
    cur = await conn.execute("SELECT 1 FROM ladders WHERE id = %s", (ladder_id,))
    if await cur.fetchone() is None:
        raise NotFound("No ladder has this id.")


_STANDINGS_SQL = f"""
SELECT r.player_id, p.name, r.rating, r.games, r.wins, r.draws, r.losses, r.provisional,
       r.peak, r.reached_master,
       h.after[greatest(cardinality(h.after) - {TREND_GAMES - 1}, 1):],
       h.before[greatest(cardinality(h.before) - {TREND_GAMES - 1}, 1):]
FROM ratings r
LEFT JOIN players p ON p.id = r.player_id
LEFT JOIN rating_histories h ON h.ladder_id = r.ladder_id AND h.player_id = r.player_id
WHERE r.ladder_id = %s
ORDER BY r.rating DESC, r.player_id
LIMIT %s OFFSET %s
"""


async def standings(
    conn: AsyncConnection, ladder_id: str, *, limit: int | None = None, offset: int = 0
) -> list[Standing]:
    cur = await conn.execute(_STANDINGS_SQL, (ladder_id, limit, offset))
    return [
        Standing(
            rank=offset + i,
            player_id=r[0],
            name=r[1],
            rating=r[2],
            games=r[3],
            wins=r[4],
            draws=r[5],
            losses=r[6],
            provisional=r[7],
            peak=r[8],
            reached_master=r[9],
            trend=[a - b for a, b in zip(r[10] or [], r[11] or [], strict=True)],
        )
        for i, r in enumerate(await cur.fetchall(), start=1)
    ]


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
    offset: Annotated[int, Parameter(ge=0)] = 0,
) -> Leaderboard:
    """The ladder's players best first: rating, games, W/D/L, recent trend, provisional mark."""
    async with pool.connection() as conn:
        await _ladder_exists(conn, ladder_id)
        cur = await conn.execute(
            "SELECT position, matches, updated_at FROM ladder_projections WHERE ladder_id = %s",
            (ladder_id,),
        )
        row = await cur.fetchone()
        cur = await conn.execute("SELECT count(*) FROM ratings WHERE ladder_id = %s", (ladder_id,))
        count = await cur.fetchone()
        rows = await standings(conn, ladder_id, limit=limit, offset=offset)
    return Leaderboard(
        ladder_id=ladder_id,
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
    after_game: Annotated[int, Parameter(ge=0)] = 0,
) -> PlayerRatings:
    """A player's rating history on a ladder: before, after and change per match, oldest first."""
    async with pool.connection() as conn:
        await _ladder_exists(conn, ladder_id)
        cur = await conn.execute("SELECT name FROM players WHERE id = %s", (player_id,))
        named = await cur.fetchone()
        if named is None:
            raise NotFound("No player has this id.")
        cur = await conn.execute(
            "SELECT rating, games, provisional FROM ratings WHERE ladder_id = %s"
            " AND player_id = %s",
            (ladder_id, player_id),
        )
        current = await cur.fetchone()
        cur = await conn.execute(
            """SELECT h.game, h.match_id, h.position, h.opponent_id, p.name, h.score,
                      h.before, h.after, h.change
               FROM rating_history h LEFT JOIN players p ON p.id = h.opponent_id
               WHERE h.ladder_id = %s AND h.player_id = %s AND h.game > %s
               ORDER BY h.game LIMIT %s""",
            (ladder_id, player_id, after_game, limit),
        )
        rows = await cur.fetchall()
    return PlayerRatings(
        ladder_id=ladder_id,
        player_id=player_id,
        name=named[0],
        rating=current[0] if current else None,
        games=current[1] if current else 0,
        provisional=current[2] if current else True,
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
            )
            for r in rows
        ],
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
        await _ladder_exists(conn, ladder_id)
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
            ]
        )
    return Response(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{ladder_id}-standings.csv"'},
    )


def _redis(settings: Settings) -> Any:
    from workers.queue import redis_client

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
    from workers.queue import enqueue_ladder_update

    async with pool.connection() as conn:
        await _ladder_exists(conn, ladder_id)

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
    from workers.queue import fetch_job

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


ROUTES = [leaderboard, player_ratings, standings_csv, recompute, job_status]
