"""Accounts: register, who am I, and the admin's role grants."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get, post
from litestar.params import Parameter
from psycopg_pool import AsyncConnectionPool

from service.accounts.guards import requires_role
from service.accounts.players import Player, register, set_roles
from service.errors import Conflict, NotFound


class RegisterBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[^\s].*$")]


class Registered(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    roles: tuple[str, ...]
    token: str
    """The bearer token. Shown once: only its SHA-256 is kept."""


class RolesBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    roles: tuple[Literal["player", "organiser", "admin"], ...]


@post("/api/players", operation_id="registerPlayer", tags=["players"], security=[])
async def register_player(data: RegisterBody, pool: AsyncConnectionPool) -> Registered:
    """Register a player. The response holds the bearer token, shown only this once."""
    async with pool.connection() as conn:
        player, token = await register(conn, data.name)
    return Registered(id=player.id, name=player.name, roles=player.roles, token=token)


@get("/api/me", operation_id="getMe", tags=["players"])
async def get_me(player: Player) -> Player:
    """The signed-in player: id, name and roles."""
    return player


@post(
    "/api/admin/players/{player_id:str}/roles",
    operation_id="setPlayerRoles",
    tags=["admin"],
    guards=[requires_role("admin")],
    status_code=200,
)
async def grant_roles(
    player_id: Annotated[str, Parameter(description="The player's id")],
    data: RolesBody,
    pool: AsyncConnectionPool,
    request: Request[Any, Any, Any],
    player: Player,
) -> Player:
    """Set a player's roles (admin only); ``player`` is always kept. An admin may
    not drop their own admin role: one request could lock every admin out."""
    if player_id == player.id and "admin" not in data.roles:
        raise Conflict(
            "You may not remove your own admin role; another admin can.",
            code="own_admin_role",
        )
    async with pool.connection() as conn:
        changed = await set_roles(conn, player_id, list(data.roles))
    # Seen at once by this app; other API processes see it within the cache's TTL.
    request.app.state.tokens.forget(player_id)
    if changed is None:
        raise NotFound("No player has this id.")
    return changed


ROUTES = [register_player, get_me, grant_roles]
