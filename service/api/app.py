"""The Litestar application: ``create_app(settings) -> Litestar``.

Plug-in points for the other parts (edit the two lists below, one line each):

* ``ROUTES``: ``"module:attribute"`` of a route handler, controller or router
  (or a list of them) to mount, e.g. ``"service.live.routes:ROUTES"``. They
  are imported when an app is created, so an app never loads a part it does
  not mount, and a part's module may import from ``service.api`` freely.
* ``ON_STARTUP``: ``"module:function"`` called as ``await fn(app)`` (or
  ``fn(app)``) once the pool, Redis client, event store and match service are
  on ``app.state``. This is where a part registers its after-commit hooks:
  ``app.state.matches.after_commit.append(publish)``.
* ``PLUGINS``: ``"module:Class"`` of a Litestar init plugin, for a part that
  must add middleware (``service.ops``: request ids, JSON logs, health, metrics).

Tests and scripts can also call ``register_router(handler)`` before
``create_app``. What the lifespan puts on ``app.state``: ``settings``,
``pool`` (psycopg ``AsyncConnectionPool``), ``store`` (``EventStore``),
``redis`` (``redis.asyncio.Redis`` or None), ``matches`` (``MatchService``).
The OpenAPI document is served at ``/schema/openapi.json``, Swagger UI at
``/schema/swagger``.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import logging
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from litestar import Litestar
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import ControllerRouterHandler

from service.api.auth import TokenCache
from service.api.deps import DEPENDENCIES
from service.api.errors import EXCEPTION_HANDLERS, document_problems
from service.settings import Settings, load_settings

log = logging.getLogger("matcha.api")

ROUTES: list[str] = [
    "service.api.players:ROUTES",
    "service.api.ladders:ROUTES",
    "service.api.pairing:ROUTES",
    "service.api.match_routes:ROUTES",
    "service.web.routes:ROUTES",
    "service.api.admin:ROUTES",
    "service.api.ratings:ROUTES",
    "service.api.replays:ROUTES",
]
"""Route handlers mounted on every app, as ``"module:attribute"``."""

ON_STARTUP: list[str] = [
    "service.api.admin:on_startup",
    "service.ops.instrument:instrument_app",
    "workers.queue:on_startup",
]
"""Async or sync callables ``fn(app)`` run at start, after ``app.state`` is ready."""

PLUGINS: list[str] = [
    "service.ops:OpsPlugin",
    "service.live.plugin:LivePlugin",
    "service.botplay.plugin:BotPlayPlugin",
]
"""Litestar init plugin classes (``"module:Class"``), for parts that add middleware
(ops: request ids, JSON logs, ``/healthz``, ``/readyz``, ``/metrics``)."""

_REGISTERED: list[ControllerRouterHandler] = []


def register_router(handler: ControllerRouterHandler) -> None:
    """Mount ``handler`` on every app created from now on (tests, scripts)."""
    _REGISTERED.append(handler)


def _resolve(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def _route_handlers() -> list[ControllerRouterHandler]:
    handlers: list[ControllerRouterHandler] = []
    for target in ROUTES:
        found = _resolve(target)
        handlers.extend(found if isinstance(found, Sequence) else [found])
    handlers.extend(_REGISTERED)
    return handlers


def _one_operation_id_per_path(handler: Any) -> None:
    """A handler mounted on several paths with one fixed ``operation_id`` would
    make the OpenAPI document fail (ids must be unique): the first path keeps
    the id, the others get ``<id>_2``, ``<id>_3``..."""
    base = getattr(handler, "operation_id", None)
    paths = sorted(getattr(handler, "paths", ()) or ())
    if not isinstance(base, str) or len(paths) < 2:
        return
    # "/api/x/{match_id:str}/y" -> "/api/x/{match_id}/y", as rebuilt from components
    plain = [re.sub(r"\{(\w+):[^}]*\}", r"{\1}", p) for p in paths]

    def operation_id(_: Any, __: Any, components: list[Any]) -> str:
        path = "/" + "/".join(c if isinstance(c, str) else "{" + c.name + "}" for c in components)
        index = plain.index(path) if path in plain else len(plain)
        return base if index == 0 else f"{base}_{index + 1}"

    handler.operation_id = operation_id


async def _connect_redis(url: str) -> Any:
    """A Redis client, or None. Redis is only a hint channel: the API serves without it."""
    if not url:
        return None
    from redis.asyncio import Redis

    client = Redis.from_url(url, socket_connect_timeout=1.0, health_check_interval=30)
    try:
        await client.ping()
    except Exception as exc:  # any failure to reach it: serve anyway, retry lazily
        log.warning(
            "Redis at %s is unreachable (%s); live hints are off until it answers", url, exc
        )
    return client


GC_THRESHOLD = (20_000, 20, 20)
"""Python's cyclic GC thresholds for an API process (default (700, 10, 10)).

A request allocates thousands of short-lived containers, nearly all freed by
reference counting, so the default gen-0 threshold ran a collection every few
requests, and each older collection walked the caches (folded matches, heads,
seeds): about 8% of the API's CPU under bench/bench_api.py. Cycles are still
collected, just in larger batches."""

_gc_tuned = False


def _tune_gc() -> None:
    """Once per process, after start: freeze what start-up built (modules, routes,
    schemas) so that no collection walks it again, and raise the thresholds."""
    global _gc_tuned
    if _gc_tuned:
        return
    _gc_tuned = True
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


@asynccontextmanager
async def _lifespan(app: Litestar) -> AsyncIterator[None]:
    from service.api.auth import bootstrap_admin
    from service.api.summaries import catch_up_match_summaries
    from service.matches import MatchService
    from service.store import EventStore, apply_migrations, open_pool

    settings: Settings = app.state.settings
    url = settings.database.url
    if not url:
        raise RuntimeError("DATABASE_URL is not set (matcha run starts an embedded server)")
    if settings.database.migrate_on_start:
        await to_thread.run_sync(apply_migrations, url)
    pool = await open_pool(
        url, min_size=settings.database.pool_min, max_size=settings.database.pool_max
    )
    redis = await _connect_redis(settings.redis.url)
    try:
        store = EventStore(pool)
        app.state.pool = pool
        app.state.store = store
        app.state.redis = redis
        app.state.matches = MatchService(pool, store)
        async with pool.connection() as conn:
            if settings.api.admin_token:
                await bootstrap_admin(conn, settings.api.admin_name, settings.api.admin_token)
            caught_up = await catch_up_match_summaries(conn)
            if caught_up:
                log.warning("rebuilt %d match summaries that were behind their events", caught_up)
        for target in ON_STARTUP:
            result = _resolve(target)(app)
            if inspect.isawaitable(result):
                await result
        _tune_gc()
        yield
    finally:
        if redis is not None:
            await redis.aclose()
        await pool.close()


MAX_BODY_BYTES = 1_000_000
"""Bigger bodies get 413 before they are read into memory or decoded."""


def create_app(settings: Settings | None = None) -> Litestar:
    settings = settings or load_settings()
    openapi = OpenAPIConfig(
        title="Matcha match service",
        version="1.0.0",
        description="Ladders, pairing and event-sourced Matcha matches. See docs/api.md.",
        path="/schema",
        render_plugins=[SwaggerRenderPlugin(path="/swagger")],
        components=Components(
            security_schemes={
                "bearer": SecurityScheme(type="http", scheme="bearer", description="Player token")
            }
        ),
        security=[{"bearer": []}],
    )
    app = Litestar(
        route_handlers=_route_handlers(),
        dependencies=DEPENDENCIES,
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[_lifespan],
        plugins=[_resolve(target)() for target in PLUGINS],
        openapi_config=openapi,
        debug=False,
        # The largest honest body is a record to check: a 10-hand match is ~200 KB.
        request_max_body_size=MAX_BODY_BYTES,
    )
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            _one_operation_id_per_path(handler)
            document_problems(handler)
    app.state.settings = settings
    app.state.tokens = TokenCache()
    return app
