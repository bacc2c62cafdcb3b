"""Who is calling, over HTTP and the live streams: the bearer token of a request
turned into its player, and the role guards of the routes.

Shared by every adapter that speaks HTTP (the API, the live streams, the
tournaments' and the evidence's routes, bot play). Authentication runs at
most once per request: the guard or the dependency that first needs the
caller looks the token up (through the app's ``TokenCache``) and leaves the
player on the request's state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from service.accounts.players import Player, player_by_token
from service.errors import Forbidden, Unauthorized

_ANON = object()

SIGN_IN = "Sign in: send 'Authorization: Bearer <token>'."


def token_from_header(value: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (None: no header)."""
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("The Authorization header must be 'Bearer <token>'.")
    return token.strip()


def _authorization(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    """The first ``Authorization`` header, read from the ASGI scope: ``connection.headers``
    would build Litestar's header multidict for this one value on every request."""
    for name, value in connection.scope["headers"]:
        if name == b"authorization":  # ASGI servers send names in lower case
            return value.decode("latin-1")
    return None


def bearer_token(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    return token_from_header(_authorization(connection))


async def player_of_token(state: Any, token: str) -> Player | None:
    """The player ``token`` belongs to (None: nobody), through the app's token cache
    (``state.tokens``). One cache per app, not per process: two apps in one process
    (tests) may serve different databases where the same token means different
    players. Unknown tokens are never cached."""
    tokens = state.tokens
    player: Player | None = tokens.get(token)
    if player is None:
        async with state.pool.connection() as conn:
            player = await player_by_token(conn, token)
        if player is not None:
            tokens.put(token, player)
    return player


async def authenticate(connection: ASGIConnection[Any, Any, Any, Any]) -> Player | None:
    """The caller, or None when no token was sent. A wrong token is refused."""
    cached = connection.state.get("player", _ANON)
    if cached is not _ANON:
        return cached  # type: ignore[no-any-return]
    token = bearer_token(connection)
    player: Player | None = None
    if token is not None:
        player = await player_of_token(connection.app.state, token)
        if player is None:
            raise Unauthorized("This bearer token is not valid.")
    connection.state["player"] = player
    return player


async def current_player(request: ASGIConnection[Any, Any, Any, Any]) -> Player:
    player = await authenticate(request)
    if player is None:
        raise Unauthorized(SIGN_IN)
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
            raise Unauthorized(SIGN_IN)
        if not (player.has(role) or player.has("admin")):
            raise Forbidden(f"Only a player with role {role!r} may do this.")

    guard.__name__ = f"requires_{role}"
    return guard
