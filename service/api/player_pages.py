"""Read-only routes the web client's player pages need: names for ids, a
player's profile (every ladder's standing), their record against each opponent.

Public facts only: names, ratings, results. Everything is read from the
projections (``players``, ``ratings``, ``match_summaries``); nothing here
computes a rating or looks at a match's cards. The rating history per ladder
is ``GET /api/ladders/{ladder_id}/players/{player_id}/ratings``, the recent
matches ``GET /api/matches?player=``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec
from litestar import get
from litestar.params import Parameter
from psycopg_pool import AsyncConnectionPool

from service.errors import NotFound, ValidationFailed
from service.fairplay.service import closure_of
from service.store.ops import run_async

MAX_IDS = 100


class PlayerName(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str


class LadderStanding(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    ladder_name: str
    ruleset: str
    joined_at: datetime | None
    """None: not a member (any more), but rated there."""
    rank: int | None
    """Among the ladder's rated players (None: no rated match yet)."""
    players: int
    rating: float | None
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool
    peak: float | None


class PlayerRecord(msgspec.Struct, frozen=True, kw_only=True):
    matches: int
    """Finished matches (annulled ones are not counted): wins + draws + losses + aborted."""
    wins: int
    draws: int
    losses: int
    live: int
    aborted: int = 0
    """Ended with no result because a seat made no first move in time (no-show): no
    winner, yet not a draw, and unrated."""


class PlayerProfile(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    roles: tuple[str, ...]
    joined_at: datetime
    ladders: list[LadderStanding]
    record: PlayerRecord
    closed_for_fair_play: bool = False
    """The account was closed for fair play (docs/fairplay.md); its finished
    matches stay readable as records."""


class HeadToHead(msgspec.Struct, frozen=True, kw_only=True):
    opponent_id: str
    opponent_name: str | None
    matches: int
    wins: int
    draws: int
    losses: int
    last_match_id: str
    last_played_at: datetime
    aborted: int = 0
    """No-shows: no winner, not a draw (see ``PlayerRecord.aborted``)."""


@get(
    "/api/players",
    operation_id="listPlayerNames",
    tags=["players"],
    security=[],
)
async def player_names(
    pool: AsyncConnectionPool,
    ids: Annotated[str | None, Parameter(description="Comma-separated player ids")] = None,
    name: Annotated[str | None, Parameter(description="An exact name (case ignored)")] = None,
) -> list[PlayerName]:
    """Names of players, by ids (``?ids=a,b``) or by name (``?name=sen``)."""
    if (ids is None) == (name is None):
        raise ValidationFailed("Give exactly one of ?ids= or ?name=.", code="bad_query")
    async with pool.connection() as conn:
        if name is not None:
            cur = await conn.execute(
                "SELECT id, name FROM players WHERE lower(name) = lower(%s)", (name,)
            )
        else:
            wanted = [i for i in (ids or "").split(",") if i][:MAX_IDS]
            cur = await conn.execute(
                "SELECT id, name FROM players WHERE id = ANY(%s) ORDER BY name", (wanted,)
            )
        return [PlayerName(id=r[0], name=r[1]) for r in await cur.fetchall()]


_LADDERS_SQL = """
SELECT l.id, l.name, l.ruleset, m.joined_at, r.rating, r.games, r.wins, r.draws, r.losses,
       r.provisional, r.peak,
       CASE WHEN r.rating IS NULL THEN NULL ELSE
         (SELECT count(*) + 1 FROM ratings o WHERE o.ladder_id = l.id
            AND (o.rating > r.rating OR (o.rating = r.rating AND o.player_id < r.player_id)))
       END,
       (SELECT count(*) FROM ratings o WHERE o.ladder_id = l.id)
FROM ladders l
LEFT JOIN ladder_members m ON m.ladder_id = l.id AND m.player_id = %(p)s
LEFT JOIN ratings r ON r.ladder_id = l.id AND r.player_id = %(p)s
WHERE m.player_id IS NOT NULL OR r.player_id IS NOT NULL
ORDER BY r.games DESC NULLS LAST, l.name
"""

# An aborted match (a no-show) has no winner like a draw, but is no draw: counted apart.
_RECORD_SQL = """
SELECT count(*) FILTER (WHERE status = 'finished'),
       count(*) FILTER (WHERE status = 'finished' AND winner = seat),
       count(*) FILTER (WHERE status = 'finished' AND winner IS NULL AND NOT aborted),
       count(*) FILTER (WHERE status = 'finished' AND winner = 1 - seat),
       count(*) FILTER (WHERE status = 'live'),
       count(*) FILTER (WHERE status = 'finished' AND aborted)
FROM (SELECT status, winner, CASE WHEN player0 = %(p)s THEN 0 ELSE 1 END AS seat,
             coalesce(end_reason = 'aborted', false) AS aborted
        FROM match_summaries WHERE player0 = %(p)s OR player1 = %(p)s) s
"""


@get(
    "/api/players/{player_id:str}",
    operation_id="getPlayerProfile",
    tags=["players"],
    security=[],
)
async def player_profile(player_id: str, pool: AsyncConnectionPool) -> PlayerProfile:
    """A player's page: name, roles, each ladder's standing, their overall record."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, name, roles, created_at FROM players WHERE id = %s", (player_id,)
        )
        found = await cur.fetchone()
        if found is None:
            raise NotFound("No player has this id.", code="player_not_found")
        cur = await conn.execute(_LADDERS_SQL, {"p": player_id})
        ladders = [_standing(r) for r in await cur.fetchall()]
        cur = await conn.execute(_RECORD_SQL, {"p": player_id})
        counts = await cur.fetchone()
        closure = await run_async(conn, closure_of(player_id))
    assert counts is not None
    return PlayerProfile(
        id=found[0],
        name=found[1],
        roles=tuple(found[2]),
        joined_at=found[3],
        ladders=ladders,
        record=PlayerRecord(
            matches=counts[0],
            wins=counts[1],
            draws=counts[2],
            losses=counts[3],
            live=counts[4],
            aborted=counts[5],
        ),
        closed_for_fair_play=closure is not None,
    )


def _standing(r: tuple[Any, ...]) -> LadderStanding:
    return LadderStanding(
        ladder_id=r[0],
        ladder_name=r[1],
        ruleset=r[2],
        joined_at=r[3],
        rating=r[4],
        games=r[5] or 0,
        wins=r[6] or 0,
        draws=r[7] or 0,
        losses=r[8] or 0,
        provisional=True if r[9] is None else bool(r[9]),
        peak=r[10],
        rank=r[11],
        players=r[12],
    )


_H2H_SQL = """
SELECT opponent, max(p.name), count(*),
       count(*) FILTER (WHERE winner = seat),
       count(*) FILTER (WHERE winner IS NULL AND NOT aborted),
       count(*) FILTER (WHERE winner = 1 - seat),
       (array_agg(match_id ORDER BY updated_at DESC))[1], max(updated_at),
       count(*) FILTER (WHERE aborted)
FROM (SELECT match_id, winner, updated_at, coalesce(end_reason = 'aborted', false) AS aborted,
             CASE WHEN player0 = %(p)s THEN 0 ELSE 1 END AS seat,
             CASE WHEN player0 = %(p)s THEN player1 ELSE player0 END AS opponent
        FROM match_summaries
       WHERE (player0 = %(p)s OR player1 = %(p)s) AND status = 'finished'
         AND (%(o)s::text IS NULL OR player0 = %(o)s OR player1 = %(o)s)) s
LEFT JOIN players p ON p.id = s.opponent
GROUP BY opponent
ORDER BY count(*) DESC, max(updated_at) DESC
"""


@get(
    "/api/players/{player_id:str}/head-to-head",
    operation_id="getPlayerHeadToHead",
    tags=["players"],
    security=[],
)
async def head_to_head(
    player_id: str,
    pool: AsyncConnectionPool,
    opponent: Annotated[str | None, Parameter(description="Only against this player")] = None,
) -> list[HeadToHead]:
    """The player's finished matches against each opponent, most played first
    (annulled matches are not counted)."""
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT 1 FROM players WHERE id = %s", (player_id,))
        if await cur.fetchone() is None:
            raise NotFound("No player has this id.", code="player_not_found")
        cur = await conn.execute(_H2H_SQL, {"p": player_id, "o": opponent})
        rows = await cur.fetchall()
    return [
        HeadToHead(
            opponent_id=r[0],
            opponent_name=r[1],
            matches=r[2],
            wins=r[3],
            draws=r[4],
            losses=r[5],
            last_match_id=r[6],
            last_played_at=r[7],
            aborted=r[8],
        )
        for r in rows
    ]


ROUTES = [player_names, player_profile, head_to_head]
"""Mounted through ``service.app.ROUTES``."""
