"""Fair play over HTTP (docs/fairplay.md): flags for admins, their decisions, a
ladder's thresholds for its organiser.

Only admins see flags: a player asking about flags, their own included, gets
403 like anyone without the role. Decisions go through
``service.fairplay.service.decide_flag`` (the decider, then the match core's
annulments); this module only adapts HTTP to it.
"""

from __future__ import annotations

import inspect
import logging
from typing import Annotated, Literal

import msgspec
from litestar import get, post, put
from litestar.datastructures import State
from litestar.params import Parameter, QueryParameter
from psycopg_pool import AsyncConnectionPool

from schemas.fairplay import FairPlaySettings, FlagDecision
from service.accounts.guards import requires_role
from service.accounts.players import Player
from service.errors import Forbidden, NotFound
from service.fairplay import ladder
from service.fairplay.service import (
    FlagState,
    Outcome,
    decide_flag,
    decisions,
    names_of,
    state_of,
)
from service.ladders import ladder_by_id
from service.matches import MatchCore
from service.store.ops import run_async

log = logging.getLogger("matcha.fairplay")

FlagId = Annotated[str, Parameter(max_length=64)]


@get(
    "/api/admin/flags",
    operation_id="listFlags",
    tags=["admin"],
    guards=[requires_role("admin")],
)
async def list_flags(
    pool: AsyncConnectionPool,
    status: Annotated[Literal["open", "all"], QueryParameter()] = "open",
    ladder_id: Annotated[str | None, QueryParameter(name="ladder", max_length=64)] = None,
) -> list[FlagState]:
    """Flags by weight, heaviest first; ``status=open`` (default) leaves out decided ones."""
    async with pool.connection() as conn:
        flags = [
            f
            for f in await run_async(conn, ladder.every_flag())
            if ladder_id in (None, f.ladder_id)
        ]
        decided = await run_async(conn, decisions())
        names = await run_async(conn, names_of(flags))
    found = [state_of(f, decided, names) for f in flags]
    return [f for f in found if status == "all" or f.decided is None]


@get(
    "/api/admin/flags/{flag_id:str}",
    operation_id="getFlag",
    tags=["admin"],
    guards=[requires_role("admin")],
)
async def get_flag(flag_id: FlagId, pool: AsyncConnectionPool) -> FlagState:
    """One flag: the players, the signal, its numbers and matches, links to their audits."""
    async with pool.connection() as conn:
        flag = await run_async(conn, ladder.one_flag(flag_id))
        decided = await run_async(conn, decisions())
        names = await run_async(conn, names_of([] if flag is None else [flag]))
    if flag is None:
        raise NotFound("No flag has this id.", code="flag_not_found")
    return state_of(flag, decided, names)


@post(
    "/api/admin/flags/{flag_id:str}/decision",
    operation_id="decideFlag",
    tags=["admin"],
    guards=[requires_role("admin")],
    status_code=200,
)
async def decide(
    flag_id: FlagId,
    data: FlagDecision,
    player: Player,
    pool: AsyncConnectionPool,
    matches: MatchCore,
    state: State,
) -> Outcome:
    """Dismiss (with a reason), void the flag's matches, or close an account for
    fair play (its finished ladder matches voided, its opponents refunded)."""
    async with pool.connection() as conn:
        outcome = await decide_flag(conn, matches, flag_id, player.id, data)
    if outcome.closed is not None:
        state.tokens.forget(outcome.closed)  # signs in no more, here at once
    for ladder_id in outcome.ladders:
        try:
            asked = state.on_annulled(ladder_id)
            if inspect.isawaitable(asked):
                await asked
        except Exception:  # the decision is committed; the catch-up recomputes anyway
            log.exception("could not enqueue the ratings recompute of ladder %s", ladder_id)
    return outcome


async def _may_organise(pool: AsyncConnectionPool, ladder_id: str, player: Player) -> None:
    async with pool.connection() as conn:
        found = await ladder_by_id(conn, ladder_id)
    if found.created_by != player.id and not player.has("admin"):
        raise Forbidden("Only the ladder's organiser (or an admin) sets its fair-play thresholds.")


@get(
    "/api/ladders/{ladder_id:str}/fairplay",
    operation_id="getFairPlaySettings",
    tags=["ladders"],
    guards=[requires_role("organiser")],
)
async def get_settings(
    ladder_id: Annotated[str, Parameter(max_length=64)], pool: AsyncConnectionPool, player: Player
) -> FairPlaySettings:
    """The ladder's fair-play thresholds (the defaults until its organiser sets them)."""
    await _may_organise(pool, ladder_id, player)
    async with pool.connection() as conn:
        return await run_async(conn, ladder.settings_of(ladder_id))


@put(
    "/api/ladders/{ladder_id:str}/fairplay",
    operation_id="setFairPlaySettings",
    tags=["ladders"],
    guards=[requires_role("organiser")],
)
async def set_settings(
    ladder_id: Annotated[str, Parameter(max_length=64)],
    data: FairPlaySettings,
    pool: AsyncConnectionPool,
    player: Player,
) -> FairPlaySettings:
    """Set the thresholds (every key bounded; an unknown key is refused); the
    flags projection recomputes the ladder's flags on its next pass."""
    await _may_organise(pool, ladder_id, player)
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO fairplay_settings (ladder_id, settings, dirty, updated_by)"
            " VALUES (%s, %s, true, %s) ON CONFLICT (ladder_id) DO UPDATE"
            " SET settings = excluded.settings, dirty = true, updated_by = excluded.updated_by,"
            " updated_at = now()",
            (ladder_id, msgspec.json.encode(data).decode(), player.id),
        )
    return data


ROUTES = [list_flags, get_flag, decide, get_settings, set_settings]
