"""Dependencies every controller may ask for, and the auth guards.

``provide_*`` return what the lifespan put on ``app.state``. Authentication
runs at most once per request: the guard or the dependency that first needs
the caller looks the bearer token up and leaves the player on the request's
state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import Provide
from litestar.handlers.base import BaseRouteHandler
from psycopg_pool import AsyncConnectionPool
from redis.asyncio import Redis

from service.api.auth import Player, player_by_token
from service.errors import Forbidden, Unauthorized
from service.matches import Caller, MatchCore
from service.settings import Settings
from service.store import EventStore

_ANON = object()


def provide_settings(state: State) -> Settings:
    settings: Settings = state.settings
    return settings


def provide_pool(state: State) -> AsyncConnectionPool:
    return state.pool  # type: ignore[no-any-return]


def provide_store(state: State) -> EventStore:
    return state.store  # type: ignore[no-any-return]


def provide_redis(state: State) -> Redis | None:
    """The Redis client, or None while Redis is unreachable (it is only a hint channel)."""
    return state.redis  # type: ignore[no-any-return]


def provide_matches(state: State) -> MatchCore:
    return state.matches  # type: ignore[no-any-return]


def _authorization(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    """The first ``Authorization`` header, read from the ASGI scope: ``connection.headers``
    would build Litestar's header multidict for this one value on every request."""
    for name, value in connection.scope["headers"]:
        if name == b"authorization":  # ASGI servers send names in lower case
            return value.decode("latin-1")
    return None


def bearer_token(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    header = _authorization(connection)
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("The Authorization header must be 'Bearer <token>'.")
    return token.strip()


async def authenticate(connection: ASGIConnection[Any, Any, Any, Any]) -> Player | None:
    """The caller, or None when no token was sent. A wrong token is refused."""
    cached = connection.state.get("player", _ANON)
    if cached is not _ANON:
        return cached  # type: ignore[no-any-return]
    token = bearer_token(connection)
    player: Player | None = None
    if token is not None:
        # One cache per app, not per process: two apps in one process (tests) may
        # serve different databases where the same token means different players.
        tokens = connection.app.state.tokens
        player = tokens.get(token)
        if player is None:
            pool = connection.app.state.pool
            async with pool.connection() as conn:
                player = await player_by_token(conn, token)
            if player is None:
                raise Unauthorized("This bearer token is not valid.")
            tokens.put(token, player)
    connection.state["player"] = player
    return player


def caller_of(player: Player | None) -> Caller:
    """The viewer policy's caller for a signed-in player (or anonymous for None)."""
    if player is None:
        return Caller()
    return Caller(player_id=player.id, roles=frozenset(player.roles))


async def current_player(request: ASGIConnection[Any, Any, Any, Any]) -> Player:
    player = await authenticate(request)
    if player is None:
        raise Unauthorized("Sign in: send 'Authorization: Bearer <token>'.")
    return player


async def maybe_player(request: ASGIConnection[Any, Any, Any, Any]) -> Player | None:
    """The caller if a token was sent; None for an anonymous spectator."""
    return await authenticate(request)


Guard = Callable[[ASGIConnection[Any, Any, Any, Any], BaseRouteHandler], Awaitable[None]]


def requires_role(role: str) -> Guard:
    """A guard: the caller must hold ``role`` (admins hold every role's rights)."""

    async def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        player = await authenticate(connection)
        if player is None:
            raise Unauthorized("Sign in: send 'Authorization: Bearer <token>'.")
        if not (player.has(role) or player.has("admin")):
            raise Forbidden(f"Only a player with role {role!r} may do this.")

    guard.__name__ = f"requires_{role}"
    return guard


DEPENDENCIES: dict[str, Provide] = {
    "settings": Provide(provide_settings, sync_to_thread=False),
    "pool": Provide(provide_pool, sync_to_thread=False),
    "store": Provide(provide_store, sync_to_thread=False),
    "redis": Provide(provide_redis, sync_to_thread=False),
    "matches": Provide(provide_matches, sync_to_thread=False),
    "player": Provide(current_player),
    "viewer": Provide(maybe_player),
}
"""App-level dependencies: a handler asks for ``player`` (must be signed in) or
``viewer`` (may be anonymous) by parameter name."""
