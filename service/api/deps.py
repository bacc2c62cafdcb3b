"""Dependencies every controller may ask for.

``provide_*`` return what the lifespan put on ``app.state``; ``player`` and
``viewer`` are the caller (``service.accounts.guards``: authentication runs at
most once per request, and the role guards live there too).
"""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import Provide
from psycopg_pool import AsyncConnectionPool
from redis.asyncio import Redis

from service.accounts.guards import current_player, maybe_player
from service.matches import MatchCore
from service.settings import Settings
from service.store import EventStore


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
