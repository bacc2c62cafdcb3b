"""Fixtures of the fuzz tests: the world of ``fuzz_world``, one per module."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fuzz_world import World, seed, serve

from service.app import create_app
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings


@pytest.fixture(scope="module")
def world(
    pg_server_url: str, database_template: str, redis_server_url: str, tmp_path_factory: Any
) -> Iterator[World]:
    from service.store.db import scratch_database, with_database

    admin = "fuzz-admin-" + secrets.token_hex(12)
    data = tmp_path_factory.mktemp("fuzz-data")
    with (
        scratch_database(pg_server_url, "fuzz_", template=database_template) as name,
        pytest.MonkeyPatch.context() as env,
    ):
        env.setenv("MATCHA_DATA_DIR", str(data))  # its own signing key and checkpoints
        url = with_database(pg_server_url, name, user="matcha_app")
        settings = Settings(
            database=DatabaseSettings(
                url=url,
                migrate_on_start=False,
                pool_min=1,
                pool_max=8,
            ),
            redis=RedisSettings(url=redis_server_url, prefix=f"fuzz{secrets.token_hex(4)}"),
            api=ApiSettings(admin_token=admin, admin_name="admin"),
        )
        app = create_app(settings)
        with serve(app) as base:
            yield seed(base, app, with_database(pg_server_url, name), admin)
