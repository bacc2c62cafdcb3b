"""Redis stopped mid-match: moves are still accepted, and every viewer still
ends with the complete log once it returns (the table is the truth)."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import httpx
import pytest
import redis
from live_harness import (
    Driver,
    RedisProcess,
    SseWatcher,
    Watcher,
    expected_live_log,
    serve_in_process,
    settings_for,
)

from service.store import EventStore

pytestmark = pytest.mark.anyio


def _pattern_subscribers(url: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        return int(client.pubsub_numpat())
    finally:
        client.close()


async def test_moves_are_accepted_while_redis_is_down_and_every_viewer_ends_complete(
    database_url: str, redis_prefix: str, store: EventStore, tmp_path: Path
) -> None:
    own_redis = RedisProcess(tmp_path)
    own_redis.start()
    try:
        settings = settings_for(database_url, own_redis.url, redis_prefix)
        async with (
            serve_in_process(settings) as server,
            httpx.AsyncClient(base_url=f"http://{server}", timeout=30) as client,
        ):
            driver = Driver(client)
            rng = random.Random(21)
            match_id, a, b = await driver.new_match()
            base = f"ws://{server}/api/matches/{match_id}/ws"
            viewers = [
                (0, await Watcher(base, headers=a.auth).start()),
                (1, await Watcher(base, headers=b.auth).start()),
                ("spectator", await Watcher(base, hello={"kind": "hello"}).start()),
                (
                    "spectator",
                    await SseWatcher(f"http://{server}/api/matches/{match_id}/stream").start(),
                ),
            ]
            for _ in range(4):
                await driver.step(match_id, (a, b), rng)

            own_redis.stop()
            accepted = 0
            for _ in range(8):  # each step asserts 200: accepted with Redis gone
                if await driver.step(match_id, (a, b), rng) == 0:
                    break  # the deal ended the match early (a duel can, in a dozen moves)
                accepted += 1
            assert accepted > 0, "no command was accepted while Redis was down"
            # A spectator may even arrive during the outage.
            late = await Watcher(base, hello={"kind": "hello"}).start()
            viewers.append(("spectator", late))
            version = (await store.load(match_id))[-1].version
            for _, watcher in viewers:
                await watcher.until_version(version)  # the store carried them

            own_redis.start()
            deadline = time.monotonic() + 15
            while _pattern_subscribers(own_redis.url) < 1:  # the hub subscribed again
                assert time.monotonic() < deadline, "the live subscription did not come back"
                await asyncio.sleep(0.1)
            await driver.play_out(match_id, (a, b), rng)

            stored = await store.load(match_id)
            for viewer, watcher in viewers:
                await watcher.until_version(stored[-1].version)
                assert watcher.versions == list(range(1, stored[-1].version + 1))
                assert [r.frame["entry"] for r in watcher.events] == expected_live_log(
                    stored, viewer
                )
            for _, watcher in viewers:
                await watcher.close()
    finally:
        own_redis.stop()
