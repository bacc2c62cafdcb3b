"""``LivePlugin``: mounts live play on the API app (listed in ``service.app.PLUGINS``).

Its lifespan runs inside the API's (which owns the pool, store and Redis
client), so the hub starts after them and stops before them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol

from service.live.routes import ROUTES, start_live


@asynccontextmanager
async def live_lifespan(app: Litestar) -> AsyncIterator[None]:
    await start_live(app)
    try:
        yield
    finally:
        await app.state.live.stop()


class LivePlugin(InitPluginProtocol):
    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.route_handlers.extend(ROUTES)
        app_config.lifespan.append(live_lifespan)
        return app_config
