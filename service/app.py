"""The composition root of an API process: ``create_app(settings) -> Litestar``.

The one module that holds every adapter at once (the HTTP API, the live
streams, bot play, the web client, the tournaments' and the evidence's
routes), none of which imports another. Wired by import, in one place:
``ROUTES`` (every part's route handlers),
``ON_STARTUP`` (what each part registers once the core is up: its
after-commit hooks, its background tasks), ``PLUGINS`` (parts that add
middleware: ops, live). Tests and scripts can also call
``register_router(handler)`` before ``create_app``.

What the lifespan puts on ``app.state`` (typed: ``AppState``): ``settings``,
``pool`` (psycopg ``AsyncConnectionPool``), ``store`` (``EventStore``),
``reads`` (``service.store.replica.ReadRouting``: the standby for ``LAGGING_READS``),
``broker`` (the process's one ``service.broker.pubsub.Broker``, or None without
Redis), ``redis`` (``broker.redis``: its command client, sharded publishing on a
cluster), ``matches`` (the ``MatchCore``),
``tokens``, and ``live`` (``service.live.routes.LiveRuntime``). The OpenAPI
document is served at ``/schema/openapi.json``, Swagger UI at ``/schema/swagger``.
"""

from __future__ import annotations

import gc
import inspect
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from anyio import to_thread
from litestar import Litestar, Router
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import NotFoundException
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.plugins import InitPluginProtocol
from litestar.types import ControllerRouterHandler
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from service.accounts.players import TokenCache, bootstrap_admin
from service.api import (
    admin,
    dispute_queue,
    docs_assets,
    fairplay,
    ladders,
    match_outcome,
    match_routes,
    pairing,
    player_pages,
    players,
    ratings,
    replays,
    seasons,
)
from service.api.deps import DEPENDENCIES
from service.api.docs_assets import swagger_plugin
from service.api.errors import EXCEPTION_HANDLERS, document_problems
from service.api.openapi_doc import ArrayLikeStructs, HomogeneousTuples, add_links
from service.api.shutdown import close_all
from service.botplay.plugin import BotPlayPlugin
from service.broker.pubsub import Broker, is_cluster_url
from service.broker.wake import clocks_hint_hook, projections_hint_hook
from service.evidence import plugin as evidence_plugin
from service.evidence import routes as evidence_routes
from service.ladders import ladder_terms
from service.live.plugin import LivePlugin
from service.matches import MatchCore
from service.matches.summaries import catch_up_match_summaries
from service.ops import OpsPlugin
from service.ops.faults import kill_after_commit_hook
from service.ops.instrument import instrument_app
from service.settings import Settings, load_settings
from service.store import EventStore, apply_migrations, open_pool
from service.store.replica import ReadRouting, open_read_routing
from service.tournaments import routes as tournament_routes
from service.tournaments.plugin import TournamentPlugin
from service.web import fairplay_page, seasons_page
from service.web import routes as web_routes

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool
    from redis.asyncio import Redis

    from service.api.admin import OnAnnulled
    from service.live.routes import LiveRuntime

log = logging.getLogger("matcha.api")


class AppState(State):
    """``app.state``, typed: what the lifespan and the parts put there."""

    settings: Settings
    tokens: TokenCache
    pool: AsyncConnectionPool
    store: EventStore
    reads: ReadRouting
    """Which server a read uses: the standby for ``LAGGING_READS`` when configured."""
    broker: Broker | None
    """The process's one broker: the live hub subscribes through it."""
    redis: Redis | None
    """``broker.redis``: keys and hints (on a cluster, hints by ``SPUBLISH``)."""
    matches: MatchCore
    live: LiveRuntime
    on_annulled: OnAnnulled


ROUTES: list[ControllerRouterHandler] = [
    *players.ROUTES,
    *ladders.ROUTES,
    *pairing.ROUTES,
    *match_routes.ROUTES,
    *web_routes.ROUTES,
    *admin.ROUTES,
    *fairplay.ROUTES,
    *ratings.ROUTES,
    *replays.ROUTES,
    *seasons.ROUTES,
    *seasons_page.ROUTES,
    *fairplay_page.ROUTES,
    *evidence_routes.ROUTES,
    *tournament_routes.ROUTES,
    *docs_assets.ROUTES,
    *player_pages.ROUTES,
    *match_outcome.ROUTES,
    *dispute_queue.ROUTES,
]
"""Route handlers mounted on every app."""


def hint_the_workers(app: Litestar) -> None:
    """The after-commit hooks that wake the workers (``service.broker.wake``): the
    projection runners after a match ends, the clock sweepers after a timed match
    moves; first of all, the fault injection's hook when a test asks for it."""
    hooks = app.state.matches.after_commit
    fault = kill_after_commit_hook()
    if fault is not None:
        hooks.insert(0, fault)  # first: no hook may run before it
    if app.state.redis is None:
        log.warning("REDIS_URL is not set: the workers find new results by polling the log")
        return
    prefix = app.state.settings.redis.prefix
    hooks.append(projections_hint_hook(app.state.redis, prefix))
    hooks.append(clocks_hint_hook(app.state.redis, prefix))


ON_STARTUP: list[Callable[[Litestar], Awaitable[None] | None]] = [
    admin.on_startup,
    instrument_app,
    hint_the_workers,
    evidence_plugin.on_startup,
]
"""Called as ``fn(app)`` at start, after ``app.state`` is ready (in this order)."""

PLUGINS: list[Callable[[], InitPluginProtocol]] = [
    OpsPlugin,
    LivePlugin,
    evidence_plugin.EvidencePlugin,
    TournamentPlugin,
    BotPlayPlugin,
]
"""Litestar init plugins, for parts that add middleware (ops: request ids, JSON
logs, ``/healthz``, ``/readyz``, ``/metrics``) or start with the app (live)."""

LAGGING_READS: list[HTTPRouteHandler] = [
    match_routes.list_matches,
    ladders.list_ladders,
    ladders.get_ladder,
    ladders.list_members,
    ratings.leaderboard,
    ratings.player_ratings,
    ratings.expected,
    ratings.standings_csv,
    player_pages.player_names,
    player_pages.player_profile,
    player_pages.head_to_head,
    tournament_routes.list_tournaments,
    tournament_routes.get_tournament,
    tournament_routes.list_rounds,
    tournament_routes.get_round,
    tournament_routes.get_standings,
    tournament_routes.get_crosstable,
    tournament_routes.get_log,
]
"""Reads that may lag (``service.store.replica``): the lobby's match list, ladders,
leaderboards, player pages and tournament pages, each a GET that only reads. Their
``pool`` is the standby's while it is close enough behind (``MATCHA_STANDBY_MAX_LAG_S``),
else the primary's; without a standby it is the primary's pool itself. Not here:
commands and anything that reads its own writes (a seat's view, a command's answer),
and replays, which read a stored archive on the standby themselves and build a
missing one on the primary (``service.api.replays.load_archive``)."""


def provide_reads_that_may_lag(state: State) -> Any:
    """The ``pool`` of ``LAGGING_READS``: a pool-like whose ``connection()`` is the
    standby's when usable (``ReadRouting.lagging``), or the primary's pool."""
    reads: ReadRouting = state.reads
    return reads.pool_that_may_lag()


def _route_lagging_reads(handlers: list[ControllerRouterHandler]) -> None:
    """Give each of ``LAGGING_READS`` its own ``pool`` (a handler's dependency wins
    over the app's), before an app is made of them: the handlers themselves, and the
    copies a ``Router`` made of them when it was built (the tournaments')."""
    lagging = {handler.fn for handler in LAGGING_READS}
    for handler in LAGGING_READS:
        if set(handler.http_methods) != {"GET"}:
            raise RuntimeError(f"{handler.handler_name} may write: only a GET may lag")
    for handler in _flattened(handlers):
        if isinstance(handler, HTTPRouteHandler) and handler.fn in lagging:
            handler.dependencies = {
                **(handler.dependencies or {}),
                "pool": Provide(provide_reads_that_may_lag, sync_to_thread=False),
            }


def _flattened(handlers: list[ControllerRouterHandler]) -> list[Any]:
    found: list[Any] = []
    for item in handlers:
        if isinstance(item, Router):
            for route in item.routes:
                found.extend(getattr(route, "route_handlers", ()))
        else:
            found.append(item)
    return found


_REGISTERED: list[ControllerRouterHandler] = []


def register_router(handler: ControllerRouterHandler) -> None:
    """Mount ``handler`` on every app created from now on (tests, scripts)."""
    _REGISTERED.append(handler)


def _route_handlers() -> list[ControllerRouterHandler]:
    return [*ROUTES, *_REGISTERED]


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


async def _connect_broker(url: str) -> Broker | None:
    """This process's one broker (``service.broker.pubsub``: one Redis, or a Redis
    Cluster for a ``redis+cluster://`` URL), or None without a URL. Redis is only a
    hint channel: the API serves without it, and the broker reconnects by itself."""
    if not url:
        return None
    options: dict[str, Any] = {}
    if not is_cluster_url(url):
        # One quick retry (a pooled connection from before a restart), no backoff:
        # a hint to a dead server fails at once and the stores' readers catch up.
        options = {"socket_connect_timeout": 1.0, "health_check_interval": 30}
        options["retry"] = Retry(NoBackoff(), 1)
    broker = Broker(url, **options)
    try:
        await broker.client.ping()
    except Exception as exc:  # any failure to reach it: serve anyway, retry lazily
        log.warning(
            "Redis at %s is unreachable (%s); live hints are off until it answers", url, exc
        )
    return broker


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
    settings: Settings = app.state.settings
    url = settings.database.url
    if not url:
        raise RuntimeError("DATABASE_URL is not set (matcha run starts an embedded server)")
    if settings.database.migrate_on_start:
        await to_thread.run_sync(apply_migrations, url)
    pool = await open_pool(
        url, min_size=settings.database.pool_min, max_size=settings.database.pool_max
    )
    broker = await _connect_broker(settings.redis.url)
    reads = await open_read_routing(pool)
    try:
        store = EventStore(pool)
        app.state.pool = pool
        app.state.store = store
        app.state.reads = reads
        app.state.broker = broker
        # what the parts keep keys and publish hints with (sharded on a cluster)
        app.state.redis = broker.redis if broker is not None else None
        app.state.matches = MatchCore(store, ladder_terms=ladder_terms(pool))
        async with pool.connection() as conn:
            if settings.api.admin_token:
                await bootstrap_admin(conn, settings.api.admin_name, settings.api.admin_token)
            caught_up = await catch_up_match_summaries(conn)
            if caught_up:
                log.warning("rebuilt %d match summaries that were behind their events", caught_up)
        for start in ON_STARTUP:
            result = start(app)
            if inspect.isawaitable(result):
                await result
        _tune_gc()
        yield
    finally:
        # Each step bounded (service/api/shutdown.py): a broker or database that
        # stopped answering must not keep the process from exiting.
        steps = [("the standby", reads.close), ("the pool", lambda: pool.close(timeout=2.0))]
        if broker is not None:
            steps.insert(0, ("Redis", broker.aclose))
        await close_all(steps)


MAX_BODY_BYTES = 1_000_000
"""Bigger bodies get 413 before they are read into memory or decoded."""


def _not_found(request: Any, exc: Exception) -> Any:
    """An unknown address: a browser gets the site's HTML 404 page, anyone else the
    API's problem+json (the web client and the API are siblings; they meet here)."""
    return web_routes.not_found_page(request) or EXCEPTION_HANDLERS[NotFoundException](request, exc)


def create_app(settings: Settings | None = None) -> Litestar:
    settings = settings or load_settings()
    _route_lagging_reads(_route_handlers())
    openapi = OpenAPIConfig(
        title="Matcha match service",
        version="1.0.0",
        description="Ladders, pairing and event-sourced Matcha matches. See docs/api.md.",
        path="/schema",
        render_plugins=[swagger_plugin()],  # its assets served locally (docs_assets.py)
        components=Components(
            security_schemes={
                "bearer": SecurityScheme(type="http", scheme="bearer", description="Player token")
            }
        ),
        security=[{"bearer": []}],
    )
    app = Litestar(
        route_handlers=_route_handlers(),
        state=AppState(),
        dependencies=DEPENDENCIES,
        exception_handlers={**EXCEPTION_HANDLERS, NotFoundException: _not_found},
        lifespan=[_lifespan],
        plugins=[*(plugin() for plugin in PLUGINS), ArrayLikeStructs(), HomogeneousTuples()],
        openapi_config=openapi,
        debug=False,
        # The largest honest body is a record to check: a 10-hand match is ~200 KB.
        request_max_body_size=MAX_BODY_BYTES,
    )
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            _one_operation_id_per_path(handler)
            document_problems(handler)
    add_links(app)
    app.state.settings = settings
    app.state.tokens = TokenCache()
    return app


def app_state(app: Litestar) -> AppState:
    """``app.state`` with its types."""
    state: AppState = app.state  # type: ignore[assignment]
    return state
