"""Fixtures of the tournament tests: the real app on this test's own database
(``database_url`` from tests/conftest.py), through ``AsyncTestClient``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from tournament_harness import ADMIN_TOKEN, TournamentApi

from service.app import create_app
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings


@pytest.fixture
def settings(database_url: str, redis_server_url: str, redis_prefix: str) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False, pool_max=8),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
    )


@pytest.fixture
def app(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Litestar:
    monkeypatch.setenv("MATCHA_TOURNAMENT_POLL_S", "0.2")
    return create_app(settings)


@pytest.fixture
async def api(app: Litestar) -> AsyncIterator[TournamentApi]:
    async with AsyncTestClient(app, timeout=30) as client:
        yield TournamentApi(client)
