"""A PostgreSQL restart under a running API: a clear 503 while it is down, nothing
lost, and the same app serves again once it is back (no restart of the API)."""

from __future__ import annotations

from pathlib import Path

import pytest
from api_harness import ADMIN_TOKEN, Api, assert_problem
from litestar.testing import AsyncTestClient

import service.store.db as db
from service.api.app import create_app
from service.embedded import start_postgres
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_command_while_the_database_is_down_is_a_503_and_play_resumes_after(
    tmp_path: Path, redis_server_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "GET_CONNECTION_TIMEOUT_S", 2.0)  # the test's patience
    url, server = start_postgres(tmp_path / "pg")
    try:
        settings = Settings(
            database=DatabaseSettings(url=url, migrate_on_start=True),
            redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
            api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
        )
        async with AsyncTestClient(create_app(settings)) as client:
            api = Api(client)
            match_id, a, b = await api.new_match("duel")
            view = await api.view(match_id, a)
            mover = (a, b)[view["to_move"]]

            server.cleanup()  # PostgreSQL stops
            down = await client.post(
                f"/api/matches/{match_id}/pass", json={},
                headers={**mover.auth, "Idempotency-Key": "pass-during-outage"},
            )
            body = assert_problem(down, 503, "database_unavailable")
            assert "Idempotency-Key" in body["detail"]
            assert int(down.headers["retry-after"]) > 0
            assert_problem(await client.get(f"/api/matches/{match_id}"), 503,
                           "database_unavailable")

            url_again, server = start_postgres(tmp_path / "pg")  # back, same data
            assert url_again == url
            retried = await client.post(
                f"/api/matches/{match_id}/pass", json={},
                headers={**mover.auth, "Idempotency-Key": "pass-during-outage"},
            )
            assert retried.status_code == 200, retried.text
            after = await api.view(match_id, mover)
            assert after["version"] > view["version"]
    finally:
        server.cleanup()
