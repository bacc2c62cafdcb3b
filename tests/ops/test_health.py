"""/healthz answers while the process lives; /readyz names the dependency that fails."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from service.embedded import free_port

from .ops_harness import ops_app


@pytest.mark.anyio
async def test_healthz_answers_even_when_nothing_else_does() -> None:
    closed = free_port()
    app = ops_app(f"postgresql://postgres@127.0.0.1:{closed}/x", f"redis://127.0.0.1:{closed}/0")
    async with AsyncTestClient(app) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.anyio
async def test_readyz_is_ready_when_postgres_and_redis_answer(
    pg_server_url: str, redis_server_url: str
) -> None:
    async with AsyncTestClient(ops_app(pg_server_url, redis_server_url)) as client:
        response = await client.get("/readyz")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ready"
    assert body["failed"] == []
    assert body["checks"]["postgres"]["ok"] is True
    assert body["checks"]["redis"]["ok"] is True


@pytest.mark.anyio
async def test_readyz_names_redis_when_it_is_down_unless_redis_is_optional(
    pg_server_url: str,
) -> None:
    app = ops_app(pg_server_url, f"redis://127.0.0.1:{free_port()}/0")
    async with AsyncTestClient(app) as client:
        strict = await client.get("/readyz")
        lenient = await client.get("/readyz", params={"optional": "redis"})
    assert strict.status_code == 503
    assert strict.json()["failed"] == ["redis"]
    assert strict.json()["checks"]["postgres"]["ok"] is True
    assert "Connection" in strict.json()["checks"]["redis"]["error"]
    assert lenient.status_code == 200
    assert lenient.json()["checks"]["redis"]["ok"] is False  # still reported


@pytest.mark.anyio
async def test_readyz_gives_up_on_a_redis_that_accepts_but_never_answers(
    pg_server_url: str,
) -> None:
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(8)  # connections complete in the backlog; nobody ever replies
    try:
        port = mute.getsockname()[1]
        app = ops_app(pg_server_url, f"redis://127.0.0.1:{port}/0")
        async with AsyncTestClient(app, timeout=30) as client:
            started = time.monotonic()
            response = await client.get("/readyz")
            took = time.monotonic() - started
    finally:
        mute.close()
    assert response.status_code == 503
    assert response.json()["failed"] == ["redis"]
    assert took < 10, "the check must time out, not hang the probe"


@pytest.mark.anyio
@pytest.mark.slow
async def test_readyz_names_postgres_once_its_server_stops(
    tmp_path: Path, redis_server_url: str
) -> None:
    from service.embedded import start_postgres

    url, server = start_postgres(tmp_path / "pg")
    try:
        async with AsyncTestClient(ops_app(url, redis_server_url)) as client:
            before = await client.get("/readyz")
            server.cleanup()
            after = await client.get("/readyz")
    finally:
        server.cleanup()
    assert before.status_code == 200, before.text
    assert after.status_code == 503
    assert after.json()["failed"] == ["postgres"]
    assert after.json()["checks"]["redis"]["ok"] is True


@pytest.mark.anyio
async def test_readyz_does_not_fail_on_a_redis_that_is_not_configured(pg_server_url: str) -> None:
    """`matcha api` without REDIS_URL serves (no live hints, no jobs): that is ready."""
    async with AsyncTestClient(ops_app(pg_server_url, "")) as client:
        response = await client.get("/readyz")
    assert response.status_code == 200, response.text
    redis = response.json()["checks"]["redis"]
    assert redis["ok"] is True
    assert redis["configured"] is False
    assert redis["note"] == "REDIS_URL is not set"
