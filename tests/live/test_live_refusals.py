"""Hostile or mistaken clients are refused with a code that says why."""

from __future__ import annotations

import httpx
import pytest
from live_harness import Driver, Watcher

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
