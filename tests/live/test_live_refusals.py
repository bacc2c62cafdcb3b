"""Hostile or mistaken clients are refused with a code that says why."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from live_harness import Driver, Watcher, serve_in_process

from service.settings import Settings

pytestmark = pytest.mark.anyio


async def _closed(url: str, **kw: object) -> Watcher:
    watcher = await Watcher(url, **kw).start()  # type: ignore[arg-type]
    await watcher.until_closed()
    return watcher


async def test_unknown_match_bad_since_and_bad_token_close_with_4404_4400_4401(
    server: str, driver: Driver
) -> None:
    match_id, _, _ = await driver.new_match()
    hello = {"kind": "hello"}
    assert (await _closed(f"ws://{server}/api/matches/nope/ws", hello=hello)).close_code == 4404
    base = f"ws://{server}/api/matches/{match_id}/ws"
    assert (await _closed(f"{base}?since=-1", hello=hello)).close_code == 4400
    assert (await _closed(f"{base}?since=abc", hello=hello)).close_code == 4400
    assert (await _closed(f"{base}?token=forged")).close_code == 4401
    assert (await _closed(base, hello={"kind": "hello", "token": "forged"})).close_code == 4401
    assert (await _closed(base, hello={"kind": "nonsense"})).close_code == 4400


async def test_sse_refusals_are_problem_json(server: str, driver: Driver) -> None:
    match_id, _, _ = await driver.new_match()
    async with httpx.AsyncClient(base_url=f"http://{server}") as client:
        missing = await client.get("/api/matches/nope/stream")
        assert missing.status_code == 404
        assert missing.json()["code"] == "not_found"
        bad = await client.get(f"/api/matches/{match_id}/stream?since=x")
        assert bad.status_code == 400
        forged = await client.get(f"/api/matches/{match_id}/stream?token=forged")
        assert forged.status_code == 401


async def test_a_full_process_says_try_again_and_takes_clients_once_one_leaves(
    live_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MATCHA_LIVE_MAX_CONNECTIONS", "2")
    async with (
        serve_in_process(live_settings) as server,
        httpx.AsyncClient(base_url=f"http://{server}", timeout=30) as client,
    ):
        driver = Driver(client)
        match_id, a, _ = await driver.new_match()
        base = f"ws://{server}/api/matches/{match_id}/ws"
        first = await Watcher(base, headers=a.auth).start()
        lobby = await Watcher(f"ws://{server}/api/lobby/ws").start()
        await first.until_version(1)
        # Full: a third WebSocket (match or lobby) is told to come back; SSE gets 503.
        refused = await _closed(base, hello={"kind": "hello"})
        assert refused.close_code == 1013
        assert (await _closed(f"ws://{server}/api/lobby/ws")).close_code == 1013
        for path in (f"/api/matches/{match_id}/stream", "/api/lobby/stream"):
            sse = await client.get(path)
            assert sse.status_code == 503
            assert sse.json()["code"] == "too_many_connections"
            assert int(sse.headers["retry-after"]) > 0
        # A place freed is a place taken.
        await lobby.close()
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            again = await Watcher(base, hello={"kind": "hello"}).start()
            try:
                await again.until_version(1, timeout=1)
                break
            except Exception:
                assert asyncio.get_running_loop().time() < deadline, "the place never came back"
            finally:
                await again.close()
        await first.close()


async def test_matcha_api_closes_a_socket_that_sends_an_oversized_message(
    live_settings: Settings, server: str, driver: Driver
) -> None:
    import os
    import subprocess
    import sys
    import time

    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from service.api.http_protocol import WS_MAX_MESSAGE_BYTES
    from service.embedded import free_port

    match_id, _, _ = await driver.new_match()  # migrated and holding a match
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": live_settings.database.url,
        "REDIS_URL": live_settings.redis.url,
        "MATCHA_REDIS_PREFIX": live_settings.redis.prefix,
        "MATCHA_MIGRATE_ON_START": "0",
        "MATCHA_LIVE_HELLO_WAIT_S": "5",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "api", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient() as client:
            while True:
                try:
                    if (await client.get(f"http://127.0.0.1:{port}/healthz")).is_success:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "matcha api did not start"
                await asyncio.sleep(0.2)
        url = f"ws://127.0.0.1:{port}/api/matches/{match_id}/ws"
        async with connect(url, max_size=None) as ws:
            await ws.send('{"kind": "hello", "token": "' + "x" * WS_MAX_MESSAGE_BYTES + '"}')
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # too big
    finally:
        proc.terminate()
        proc.wait(15)
