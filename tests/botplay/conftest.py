"""Fixtures for bot play: the real app on this test's own database and Redis
prefix, with the bots moving at once and a small, uncapped estimate budget
(so an estimate is a function of its view, and tests can rebuild it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from harness import Api
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

ADMIN_TOKEN = "admin-token-for-bot-tests-" + "x" * 20


@pytest.fixture
def settings(
    database_url: str, redis_server_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    monkeypatch.setenv("MATCHA_BOT_MOVE_DELAY_MS", "0")
    monkeypatch.setenv("MATCHA_WINPROB_PLAYOUTS", "40")
    monkeypatch.setenv("MATCHA_WINPROB_MAX_MS", "0")
    return Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=True),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
    )


@pytest.fixture
def app(settings: Settings) -> Litestar:
    return create_app(settings)


@pytest.fixture
async def api(app: Litestar) -> AsyncIterator[Api]:
    async with AsyncTestClient(app) as client:
        yield Api(client, ADMIN_TOKEN)
