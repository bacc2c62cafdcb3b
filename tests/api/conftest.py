"""Fixtures for the HTTP API tests: the real app (``create_app``) on this test's
own migrated PostgreSQL database (``database_url`` from tests/conftest.py, as
the app role), driven through ``litestar.testing.AsyncTestClient``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from api_harness import ADMIN_TOKEN, Api
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings


@pytest.fixture
def settings(database_url: str, redis_server_url: str, redis_prefix: str) -> Settings:
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
        yield Api(client)
