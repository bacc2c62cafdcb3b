"""The API exits within seconds even when its database and broker stopped answering.

`matcha api` runs as a child process against PostgreSQL and Redis servers of
this test's own; a spectator holds an SSE stream and a WebSocket open; then both
servers are frozen (SIGSTOP: the sockets stay open and nothing answers, the
worst case) or stopped, and the API is asked to stop (SIGTERM, as `matcha run`
and Kubernetes do). It must be gone within SHUTDOWN_BOUND_S.

In-process, the same with litestar's AsyncTestClient, whose teardown once hung
in the lifespan's unbounded ``redis.aclose()`` / ``pool.close()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.embedded import EmbeddedPostgres, EmbeddedRedis, free_port, start_postgres, start_redis
from service.store.db import with_database
from service.store.migrate import apply_migrations

pytestmark = pytest.mark.slow

SHUTDOWN_BOUND_S = 15.0
"""uvicorn's graceful wait for open streams (5 s in `matcha api`) plus each bounded close step."""


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[str, str, EmbeddedPostgres, EmbeddedRedis]]:
    pg_url, pg = start_postgres(tmp_path / "pg")
    redis_url, redis = start_redis(tmp_path / "redis")
    apply_migrations(pg_url)
    try:
        yield with_database(pg_url, "postgres", user="matcha_app"), redis_url, pg, redis
    finally:
        for server in (pg, redis):  # thaw whatever the test froze, then stop it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGCONT)
        redis.shutdown()
        pg.cleanup()


def _make_unreachable(how: str, pg: EmbeddedPostgres, redis: EmbeddedRedis) -> None:
    if how == "frozen":
        # The whole process group: the postmaster and the backends serving the pool.
        os.killpg(pg.pid, signal.SIGSTOP)
        os.killpg(redis.pid, signal.SIGSTOP)
    else:
        redis.shutdown()
        pg.cleanup()


@pytest.mark.parametrize("how", ["frozen", "stopped"])
def test_the_api_process_exits_within_seconds_when_database_and_broker_are_unreachable(
    servers: tuple[str, str, EmbeddedPostgres, EmbeddedRedis], how: str
) -> None:
    database_url, redis_url, pg, redis = servers
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "MATCHA_MIGRATE_ON_START": "0",
        "MATCHA_ADMIN_TOKEN": "shutdown-admin-token",
    }
    api = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "api", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        process_group=0,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert api.poll() is None, api.stderr.read().decode() if api.stderr else ""
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the API did not start"
            time.sleep(0.2)
        # A live connection held open, as a spectator's page holds one.
        stream = httpx.Client(base_url=base, timeout=httpx.Timeout(5, read=None))
        with stream.stream("GET", "/api/lobby/stream") as lobby:
            assert lobby.status_code == 200
            _make_unreachable(how, pg, redis)
            started = time.monotonic()
            api.send_signal(signal.SIGTERM)
            try:
                api.wait(timeout=SHUTDOWN_BOUND_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the API was still running {SHUTDOWN_BOUND_S} s after SIGTERM")
            took = time.monotonic() - started
        stream.close()
        assert took < SHUTDOWN_BOUND_S
    finally:
        if api.poll() is None:
            os.killpg(api.pid, signal.SIGKILL)
            api.wait()


def test_the_test_client_shuts_the_app_down_within_seconds_with_both_servers_frozen(
    servers: tuple[str, str, EmbeddedPostgres, EmbeddedRedis],
) -> None:
    from litestar.testing import AsyncTestClient

    from service.app import create_app
    from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

    database_url, redis_url, pg, redis = servers
    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False, pool_min=2),
        redis=RedisSettings(url=redis_url, prefix="shutdown"),
        api=ApiSettings(admin_token="shutdown-admin-token"),
    )
    outcome: list[object] = []

    async def run() -> None:
        async with AsyncTestClient(app=create_app(settings)) as client:
            assert (await client.get("/api/ladders")).status_code == 200
            _make_unreachable("frozen", pg, redis)
        outcome.append("closed")

    # In a thread of its own, so that a hang fails this test instead of freezing the run.
    thread = threading.Thread(target=lambda: outcome.append(asyncio.run(run())), daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(timeout=SHUTDOWN_BOUND_S)
    assert not thread.is_alive(), f"the app's shutdown took more than {SHUTDOWN_BOUND_S} s"
    assert "closed" in outcome
    assert time.monotonic() - started < SHUTDOWN_BOUND_S
