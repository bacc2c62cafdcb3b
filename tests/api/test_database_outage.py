"""A PostgreSQL restart under a running API: a clear 503 while it is down, nothing
lost, and the same server serves again once it is back (no restart of the API)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_harness import ADMIN_TOKEN, Api, assert_problem
from harness import serve_in_process
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

import service.store.db as db
from service.embedded import start_postgres
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_requests_while_the_database_is_down_are_503s_and_play_resumes_after(
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
        async with (
            serve_in_process(settings) as base,
            httpx.AsyncClient(base_url=f"http://{base}", timeout=30) as client,
        ):
            api = Api(client)  # type: ignore[arg-type]
            match_id, a, b = await api.new_match("duel")
            view = await api.view(match_id, a)
            mover = (a, b)[view["to_move"]]
            move: dict[str, Any] = {
                "json": {},
                "headers": {**mover.auth, "Idempotency-Key": "pass-during-outage"},
            }

            server.cleanup()  # PostgreSQL stops
            down = await client.post(f"/api/matches/{match_id}/pass", **move)
            body = assert_problem(down, 503, "database_unavailable")
            assert "Idempotency-Key" in body["detail"]
            assert int(down.headers["retry-after"]) > 0
            assert_problem(
                await client.get(f"/api/matches/{match_id}"), 503, "database_unavailable"
            )
            # Live streams: SSE is refused the same way, a WebSocket is told to retry.
            assert_problem(
                await client.get(f"/api/matches/{match_id}/stream"), 503, "database_unavailable"
            )
            async with connect(f"ws://{base}/api/matches/{match_id}/ws?token={mover.token}") as ws:
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013

            url_again, server = start_postgres(tmp_path / "pg")  # back, same data
            assert url_again == url
            # As a client does: retry with the same key while told to (the pool
            # reconnects in the background, with backoff).
            deadline = time.monotonic() + 60
            while (
                retried := await client.post(f"/api/matches/{match_id}/pass", **move)
            ).status_code == 503 and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            assert retried.status_code == 200, retried.text
            after = await api.view(match_id, mover)
            assert after["version"] > view["version"]
    finally:
        server.cleanup()
