"""Several API processes: moves made through one reach viewers of another."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest
from live_harness import Driver, Watcher, expected_live_log, serve_subprocess

from service.settings import Settings
from service.store import EventStore

pytestmark = pytest.mark.anyio


async def test_play_through_one_process_and_watch_through_another(
    live_settings: Settings, store: EventStore
) -> None:
    # A store check only every minute: within this test only Redis can carry the moves.
    slow_check = {"MATCHA_LIVE_CHECK_S": "60", "MATCHA_LIVE_PRESENCE_DEBOUNCE_S": "0.05"}
    with (
        serve_subprocess(live_settings, slow_check) as one,
        serve_subprocess(live_settings, slow_check) as two,
    ):
        async with httpx.AsyncClient(base_url=f"http://{one}", timeout=30) as client:
            driver = Driver(client)
            match_id, a, b = await driver.new_match()
            seat0 = await Watcher(f"ws://{one}/api/matches/{match_id}/ws", headers=a.auth).start()
            seat1 = await Watcher(f"ws://{two}/api/matches/{match_id}/ws", headers=b.auth).start()
            fans = [
                await Watcher(
                    f"ws://{two}/api/matches/{match_id}/ws", hello={"kind": "hello"}
                ).start()
                for _ in range(3)
            ]
            await seat1.until_version(2)
            rng = random.Random(99)
            for _ in range(10):
                version = await driver.step(match_id, (a, b), rng)
                # Each move reaches the other process well before any store check.
                await fans[0].until_version(version, timeout=10)
            await driver.play_out(match_id, (a, b), rng)
            stored = await store.load(match_id)
            for viewer, watcher in [(0, seat0), (1, seat1), *[("spectator", f) for f in fans]]:
                await watcher.until_version(stored[-1].version, timeout=10)
                assert [r.frame["entry"] for r in watcher.events] == expected_live_log(
                    stored, viewer
                )

            async def sees_both(w: Watcher) -> None:
                while not any(
                    r.frame["kind"] == "presence" and r.frame["players"] == [True, True]
                    for r in w.frames
                ):
                    await asyncio.sleep(0.05)

            # Presence lives in Redis: a player on one process sees the other on the other.
            await asyncio.wait_for(sees_both(seat0), 5)
            await asyncio.wait_for(sees_both(seat1), 5)
            for w in [seat0, seat1, *fans]:
                await w.close()
