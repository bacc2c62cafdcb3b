"""Ladders: an organiser creates one with a ruleset and rating settings;
players join it."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Response, get, post
from psycopg import AsyncConnection
from psycopg.errors import UniqueViolation
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from schemas.bounds import Count
from schemas.rules import RulesetName, TimeControl
from service.accounts.guards import requires_role
from service.accounts.players import Player
from service.api.creates import IdempotencyKey, create_once, request_hash
from service.errors import Conflict, ValidationFailed
from service.ladders import LADDER_COLUMNS, Ladder, Member, ladder_by_id, ladder_of_row
from service.matches import new_id
from service.ratings.settings import SYSTEMS, RatingSettings, RatingSystem


def rating_settings(system: RatingSystem, raw: dict[str, Any] | None) -> RatingSettings:
    """The ladder's rating settings for ``system``, read strictly: an unknown key
    or a value out of range is a 400 that names it (docs/ratings.md lists them)."""
    given = dict(raw or {})
    tag = given.pop("system", system)
    if tag != system:
        raise ValidationFailed(
            f"rating.system is {tag!r} but rating_system is {system!r}: give one, or both alike."
        )
    kind = SYSTEMS[system]
    try:
        settings: RatingSettings = msgspec.convert(given, kind)
    except msgspec.ValidationError as exc:
        known = ", ".join(kind.__struct_fields__)
        text = str(exc).replace("`$.", "`rating.").replace("`$`", "`rating`")
        raise ValidationFailed(
            f"The {system} rating settings are not valid: {text} (settings: {known})."
        ) from exc
    return settings


class LadderBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    ruleset: RulesetName = "standard"
    rating_system: RatingSystem = "elo"
    rating: dict[str, Any] | None = None
    """The settings of ``rating_system`` (docs/ratings.md); missing keys take the defaults."""
    spectator_delay_s: Count = 0
    hide_hands_in_replay: bool = False
    dispute_window_s: Count = 86400
    clock: TimeControl | None = None
    """The time control of the ladder's matches (docs/clocks.md); None: untimed."""
    challenge_clocks: bool = False
    """A challenge may name its own time control instead of the ladder's."""


@post(
    "/api/ladders",
    operation_id="createLadder",
    tags=["ladders"],
    guards=[requires_role("organiser")],
)
async def create_ladder(
    data: LadderBody,
    player: Player,
    pool: AsyncConnectionPool,
    idempotency_key: IdempotencyKey = None,
) -> Response[Ladder]:
    """Create a ladder (organisers and admins).

    With an ``Idempotency-Key``, a resend makes no second ladder: it gets the first answer.
    """
    rating = rating_settings(data.rating_system, data.rating)

    async def create(conn: AsyncConnection) -> tuple[str, Ladder]:
        try:
            cur = await conn.execute(
                f"""INSERT INTO ladders (id, name, ruleset, rating, spectator_delay_s,
                        hide_hands_in_replay, dispute_window_s, created_by, clock,
                        challenge_clocks)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                    RETURNING {LADDER_COLUMNS}""",
                (
                    new_id(),
                    data.name,
                    data.ruleset,
                    Jsonb(msgspec.to_builtins(rating)),
                    data.spectator_delay_s,
                    data.hide_hands_in_replay,
                    data.dispute_window_s,
                    player.id,
                    None if data.clock is None else Jsonb(msgspec.to_builtins(data.clock)),
                    data.challenge_clocks,
                ),
            )
        except UniqueViolation as exc:
            raise Conflict(f"A ladder named {data.name!r} exists.", code="name_taken") from exc
        row = await cur.fetchone()
        assert row is not None
        ladder = ladder_of_row(row)
        return ladder.id, ladder

    return await create_once(
        pool,
        actor=player.id,
        key=idempotency_key,
        kind="ladder",
        request=request_hash("ladder", data),
        create=create,
    )


@get("/api/ladders", operation_id="listLadders", tags=["ladders"], security=[])
async def list_ladders(pool: AsyncConnectionPool) -> list[Ladder]:
    """Every ladder, oldest first."""
    async with pool.connection() as conn:
        cur = await conn.execute(f"SELECT {LADDER_COLUMNS} FROM ladders ORDER BY created_at, id")
        return [ladder_of_row(row) for row in await cur.fetchall()]


@get("/api/ladders/{ladder_id:str}", operation_id="getLadder", tags=["ladders"], security=[])
async def get_ladder(ladder_id: str, pool: AsyncConnectionPool) -> Ladder:
    async with pool.connection() as conn:
        return await ladder_by_id(conn, ladder_id)


@post(
    "/api/ladders/{ladder_id:str}/members",
    operation_id="joinLadder",
    tags=["ladders"],
    status_code=200,
)
async def join_ladder(ladder_id: str, player: Player, pool: AsyncConnectionPool) -> Member:
    """Join the ladder as the signed-in player (joining twice is harmless)."""
    async with pool.connection() as conn:
        await ladder_by_id(conn, ladder_id)
        await conn.execute(
            "INSERT INTO ladder_members (ladder_id, player_id) VALUES (%s, %s)"
            " ON CONFLICT DO NOTHING",
            (ladder_id, player.id),
        )
        cur = await conn.execute(
            "SELECT joined_at FROM ladder_members WHERE ladder_id = %s AND player_id = %s",
            (ladder_id, player.id),
        )
        row = await cur.fetchone()
    assert row is not None
    return Member(player_id=player.id, name=player.name, joined_at=row[0])


@get(
    "/api/ladders/{ladder_id:str}/members",
    operation_id="listLadderMembers",
    tags=["ladders"],
    security=[],
)
async def list_members(ladder_id: str, pool: AsyncConnectionPool) -> list[Member]:
    async with pool.connection() as conn:
        await ladder_by_id(conn, ladder_id)
        cur = await conn.execute(
            "SELECT m.player_id, p.name, m.joined_at FROM ladder_members m"
            " JOIN players p ON p.id = m.player_id WHERE m.ladder_id = %s"
            " ORDER BY m.joined_at, p.name",
            (ladder_id,),
        )
        return [Member(player_id=r[0], name=r[1], joined_at=r[2]) for r in await cur.fetchall()]


ROUTES = [create_ladder, list_ladders, get_ladder, join_ladder, list_members]
