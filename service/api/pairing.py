"""Pairing two ladder members into a match: by an organiser, by a challenge
the opponent accepts, or by the ladder's matchmaking queue."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Response, delete, get, post
from litestar.params import QueryParameter
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from schemas.rules import TimeControl
from service.accounts.guards import requires_role
from service.accounts.players import Player
from service.api.creates import IdempotencyKey, create_once, match_create_key, request_hash
from service.errors import Conflict, Forbidden, NotFound, ValidationFailed
from service.ladders import is_member, ladder_by_id, rating_of, terms_of
from service.matches import MatchCore, StartedMatch, new_id


class PairBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    players: tuple[str, str]


class ChallengeBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    opponent: str
    clock: TimeControl | None = None
    """The match's own time control, where the ladder allows it (``challenge_clocks``);
    None: the ladder's."""


ChallengeStatus = Literal["open", "accepted", "declined"]


class Challenge(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    ladder_id: str
    challenger: str
    opponent: str
    status: ChallengeStatus
    match_id: str | None
    created_at: datetime
    decided_at: datetime | None
    clock: TimeControl | None = None
    """The time control the challenge asks for (None: the ladder's)."""


class QueueEntry(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    rating: float
    joined_at: datetime


class QueueResult(msgspec.Struct, frozen=True, kw_only=True):
    status: Literal["waiting", "matched"]
    match: StartedMatch | None = None
    opponent: str | None = None


_CHALLENGE_COLUMNS = (
    "id, ladder_id, challenger, opponent, status, match_id, created_at, decided_at, clock"
)


def _challenge(row: tuple[Any, ...]) -> Challenge:
    return Challenge(
        id=row[0],
        ladder_id=row[1],
        challenger=row[2],
        opponent=row[3],
        status=row[4],
        match_id=row[5],
        created_at=row[6],
        decided_at=row[7],
        clock=None if row[8] is None else msgspec.convert(row[8], TimeControl),
    )


@post(
    "/api/ladders/{ladder_id:str}/matches",
    operation_id="pairPlayers",
    tags=["matches"],
    guards=[requires_role("organiser")],
)
async def pair_players(
    ladder_id: str,
    data: PairBody,
    player: Player,
    pool: AsyncConnectionPool,
    matches: MatchCore,
    idempotency_key: IdempotencyKey = None,
) -> StartedMatch:
    """An organiser pairs two members of the ladder; the match starts at once.

    With an ``Idempotency-Key``, a resend creates no second match: it gets the first answer.
    """
    a, b = data.players
    if a == b:
        raise ValidationFailed("A match needs two different players.")
    async with pool.connection() as conn:
        ladder = await ladder_by_id(conn, ladder_id)
        for player_id in (a, b):
            if not await is_member(conn, ladder_id, player_id):
                raise ValidationFailed(
                    f"Player {player_id} is not a member of this ladder.", code="not_a_member"
                )
    return await matches.start(
        players=(a, b),
        ruleset=ladder.ruleset,
        ladder_id=ladder_id,
        terms=terms_of(ladder),
        idempotency_key=None
        if idempotency_key is None
        else match_create_key(player.id, idempotency_key),
    )


@post(
    "/api/ladders/{ladder_id:str}/challenges",
    operation_id="challengePlayer",
    tags=["challenges"],
)
async def challenge(
    ladder_id: str,
    data: ChallengeBody,
    player: Player,
    pool: AsyncConnectionPool,
    idempotency_key: IdempotencyKey = None,
) -> Response[Challenge]:
    """Challenge another member of the ladder; they accept or decline.

    With an ``Idempotency-Key``, a resend makes no second challenge: it gets the first answer.
    """
    if data.opponent == player.id:
        raise ValidationFailed("You cannot challenge yourself.")

    async def create(conn: AsyncConnection) -> tuple[str, Challenge]:
        made = await _challenge_in(conn, ladder_id, data, player)
        return made.id, made

    return await create_once(
        pool,
        actor=player.id,
        key=idempotency_key,
        kind="challenge",
        request=request_hash("challenge", ladder_id, data),
        create=create,
    )


async def _challenge_in(
    conn: AsyncConnection, ladder_id: str, data: ChallengeBody, player: Player
) -> Challenge:
    ladder = await ladder_by_id(conn, ladder_id)
    if data.clock is not None and not ladder.challenge_clocks:
        raise ValidationFailed(
            "This ladder plays every match on its own time control; a challenge cannot"
            " name another (the ladder's organiser allows it with challenge_clocks).",
            code="challenge_clock_not_allowed",
        )
    if not await is_member(conn, ladder_id, player.id):
        raise Forbidden("Join the ladder before challenging on it.")
    if not await is_member(conn, ladder_id, data.opponent):
        raise ValidationFailed("The opponent is not a member of this ladder.", code="not_a_member")
    cur = await conn.execute(
        f"INSERT INTO challenges (id, ladder_id, challenger, opponent, clock)"
        f" VALUES (%s, %s, %s, %s, %s) RETURNING {_CHALLENGE_COLUMNS}",
        (
            new_id(),
            ladder_id,
            player.id,
            data.opponent,
            None if data.clock is None else Jsonb(msgspec.to_builtins(data.clock)),
        ),
    )
    row = await cur.fetchone()
    assert row is not None
    return _challenge(row)


@get("/api/challenges", operation_id="listChallenges", tags=["challenges"])
async def list_challenges(
    player: Player,
    pool: AsyncConnectionPool,
    status: Annotated[ChallengeStatus | None, QueryParameter()] = None,
) -> list[Challenge]:
    """Challenges the signed-in player made or received, newest first."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            f"SELECT {_CHALLENGE_COLUMNS} FROM challenges"
            " WHERE (challenger = %s OR opponent = %s) AND (%s::text IS NULL OR status = %s)"
            " ORDER BY created_at DESC, id",
            (player.id, player.id, status, status),
        )
        return [_challenge(r) for r in await cur.fetchall()]


async def _decide_challenge(
    challenge_id: str,
    player: Player,
    pool: AsyncConnectionPool,
    accept: bool,
    matches: MatchCore,
) -> Challenge:
    async with pool.connection() as conn, conn.transaction():
        # The row lock makes accept/decline a one-time decision: a second
        # request waits, then sees the status is no longer 'open'.
        cur = await conn.execute(
            f"SELECT {_CHALLENGE_COLUMNS} FROM challenges WHERE id = %s FOR UPDATE",
            (challenge_id,),
        )
        row = await cur.fetchone()
        if row is None:
            raise NotFound("No challenge has this id.")
        found = _challenge(row)
        if found.opponent != player.id:
            raise Forbidden("Only the challenged player may answer a challenge.")
        if found.status != "open":
            raise Conflict(f"This challenge was already {found.status}.", code="challenge_closed")
        match_id = new_id() if accept else None
        ladder = await ladder_by_id(conn, found.ladder_id) if accept else None
        cur = await conn.execute(
            f"UPDATE challenges SET status = %s, match_id = %s, decided_at = now()"
            f" WHERE id = %s RETURNING {_CHALLENGE_COLUMNS}",
            ("accepted" if accept else "declined", match_id, challenge_id),
        )
        row = await cur.fetchone()
    # The match starts after the decision committed, so no connection is held
    # while it does (many accepts at once could otherwise take every pooled
    # connection and wait for one more). If it fails, the challenge reopens.
    if match_id is not None and ladder is not None:
        try:
            await matches.start(
                players=(found.challenger, found.opponent),
                ruleset=ladder.ruleset,
                ladder_id=found.ladder_id,
                terms=terms_of(ladder, found.clock),
                match_id=match_id,
            )
        except BaseException:
            async with pool.connection() as conn:
                await conn.execute(
                    "UPDATE challenges SET status = 'open', match_id = NULL, decided_at = NULL"
                    " WHERE id = %s AND match_id = %s",
                    (challenge_id, match_id),
                )
            raise
    assert row is not None
    return _challenge(row)


@post(
    "/api/challenges/{challenge_id:str}/accept",
    operation_id="acceptChallenge",
    tags=["challenges"],
    status_code=200,
)
async def accept_challenge(
    challenge_id: str, player: Player, pool: AsyncConnectionPool, matches: MatchCore
) -> Challenge:
    """Accept a challenge: the match starts, its id is in ``match_id``."""
    return await _decide_challenge(challenge_id, player, pool, True, matches)


@post(
    "/api/challenges/{challenge_id:str}/decline",
    operation_id="declineChallenge",
    tags=["challenges"],
    status_code=200,
)
async def decline_challenge(
    challenge_id: str, player: Player, pool: AsyncConnectionPool, matches: MatchCore
) -> Challenge:
    return await _decide_challenge(challenge_id, player, pool, False, matches)


async def _lock_queue(conn: AsyncConnection, ladder_id: str) -> None:
    """One queue operation per ladder at a time (a transaction-scoped advisory
    lock on the ladder id). Without it two players joining at the same moment
    could each see the other absent and both wait, or two joiners could both
    take the same waiting player. Queue traffic is tiny next to match commands,
    so serialising it per ladder costs nothing, and the lock is released by
    COMMIT/ROLLBACK on any path."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('queue:' || %s))", (ladder_id,))


@post(
    "/api/ladders/{ladder_id:str}/queue",
    operation_id="joinQueue",
    tags=["queue"],
    status_code=200,
)
async def join_queue(
    ladder_id: str, player: Player, pool: AsyncConnectionPool, matches: MatchCore
) -> QueueResult:
    """Wait for an opponent: pairs at once with the waiting member of nearest rating
    (within the ladder's ``rating.max_difference``), else waits in the queue."""
    async with pool.connection() as conn, conn.transaction():
        ladder = await ladder_by_id(conn, ladder_id)
        if not await is_member(conn, ladder_id, player.id):
            raise Forbidden("Join the ladder before queueing on it.")
        await _lock_queue(conn, ladder_id)
        rating = await rating_of(conn, ladder_id, player.id)
        # Nearest rating first (then who waited longest), within the ladder's
        # max_difference: players farther apart than that keep waiting.
        cur = await conn.execute(
            "SELECT player_id FROM match_queue WHERE ladder_id = %s AND player_id <> %s"
            " AND abs(rating - %s) <= %s"
            " ORDER BY abs(rating - %s), joined_at, player_id LIMIT 1",
            (ladder_id, player.id, rating, ladder.rating.max_difference, rating),
        )
        row = await cur.fetchone()
        if row is None:
            await conn.execute(
                "INSERT INTO match_queue (ladder_id, player_id, rating) VALUES (%s, %s, %s)"
                " ON CONFLICT (ladder_id, player_id) DO UPDATE SET rating = EXCLUDED.rating",
                (ladder_id, player.id, rating),
            )
            return QueueResult(status="waiting")
        opponent: str = row[0]
        await conn.execute(
            "DELETE FROM match_queue WHERE ladder_id = %s AND player_id = ANY(%s)",
            (ladder_id, [opponent, player.id]),
        )
    # The match starts after the queue change committed (no connection held
    # meanwhile; see _decide_challenge). If it fails, the opponent waits again.
    try:
        # The waiting player was first: they take seat 0.
        started = await matches.start(
            players=(opponent, player.id),
            ruleset=ladder.ruleset,
            ladder_id=ladder_id,
            terms=terms_of(ladder),
        )
    except BaseException:
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO match_queue (ladder_id, player_id, rating)"
                " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (ladder_id, opponent, await rating_of(conn, ladder_id, opponent)),
            )
        raise
    return QueueResult(status="matched", match=started, opponent=opponent)


@delete(
    "/api/ladders/{ladder_id:str}/queue",
    operation_id="leaveQueue",
    tags=["queue"],
    status_code=204,
)
async def leave_queue(ladder_id: str, player: Player, pool: AsyncConnectionPool) -> None:
    """Stop waiting (harmless when not waiting)."""
    async with pool.connection() as conn, conn.transaction():
        await ladder_by_id(conn, ladder_id)
        await _lock_queue(conn, ladder_id)
        await conn.execute(
            "DELETE FROM match_queue WHERE ladder_id = %s AND player_id = %s",
            (ladder_id, player.id),
        )


@get("/api/ladders/{ladder_id:str}/queue", operation_id="listQueue", tags=["queue"], security=[])
async def list_queue(ladder_id: str, pool: AsyncConnectionPool) -> list[QueueEntry]:
    """Who is waiting on this ladder, longest-waiting first."""
    async with pool.connection() as conn:
        await ladder_by_id(conn, ladder_id)
        cur = await conn.execute(
            "SELECT player_id, rating, joined_at FROM match_queue WHERE ladder_id = %s"
            " ORDER BY joined_at, player_id",
            (ladder_id,),
        )
        return [
            QueueEntry(player_id=r[0], rating=r[1], joined_at=r[2]) for r in await cur.fetchall()
        ]


ROUTES = [
    pair_players,
    challenge,
    list_challenges,
    accept_challenge,
    decline_challenge,
    join_queue,
    leave_queue,
    list_queue,
]
