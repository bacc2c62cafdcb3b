"""``BotPlayPlugin``: mounts bot play on the API app (``service.app.PLUGINS``).

Its lifespan runs inside the API's (which owns the pool, the Redis client and
the match service): it makes sure the bots' accounts exist, registers the two
after-commit hooks (the bots' moves, the spectators' odds), starts the sweep,
and on the way out stops every task before the pool closes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol

from service.botplay.accounts import ensure_bot_accounts
from service.botplay.config import load
from service.botplay.driver import BotDriver
from service.botplay.match_port import MatchPort
from service.botplay.odds import OddsService, OddsStore
from service.botplay.routes import ROUTES
from service.botplay.state import BotPlay


@asynccontextmanager
async def botplay_lifespan(app: Litestar) -> AsyncIterator[None]:
    settings = load()
    port = MatchPort(app.state.matches)
    async with app.state.pool.connection() as conn:
        accounts = await ensure_bot_accounts(conn)
    store = OddsStore(app.state.redis, app.state.settings.redis.prefix, settings.odds_ttl_s)
    botplay = BotPlay(
        settings=settings,
        port=port,
        accounts=accounts,
        driver=BotDriver(port, accounts, settings, app.state.pool),
        odds=OddsService(port, store, settings),
    )
    app.state.botplay = botplay
    if settings.bots:
        port.on_commit(botplay.driver.after_commit)
        botplay.driver.start()
    if settings.odds:
        port.on_commit(botplay.odds.after_commit)
        botplay.odds.start()
        live = getattr(app.state, "live", None)
        if live is not None:  # the spectators of a live stream watch the odds too
            live.on_spectator.append(botplay.odds.spectating)
    try:
        yield
    finally:
        await botplay.driver.stop()
        await botplay.odds.stop()


class BotPlayPlugin(InitPluginProtocol):
    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.route_handlers.extend(ROUTES)
        app_config.lifespan.append(botplay_lifespan)
        return app_config
