"""The live hub's subscription goes through the process's one broker
(``service.broker.pubsub``): when the broker's connection comes back after an
outage (a restart here; a failover on a cluster, ``tests/cluster``), the hub
subscribes again and sweeps the store at once, so a viewer misses no frame even
though the hints of the outage were never sent and the periodic check is far off."""

from __future__ import annotations

import random
import time
from pathlib import Path

import httpx
import pytest
import redis
from live_harness import Driver, RedisProcess, Watcher, serve_in_process, settings_for, until

from service.store import EventStore

pytestmark = pytest.mark.anyio

FAR_OFF_S = "120"
"""The periodic check, up or down: no test waits that long, so only the sweep can deliver."""


def _pattern_subscribers(url: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        return int(client.pubsub_numpat())
    except redis.ConnectionError:
        return 0
    finally:
        client.close()


async def test_given_a_broker_restart_when_it_answers_again_then_the_hub_resubscribes_and_sweeps(
    database_url: str,
    redis_prefix: str,
    store: EventStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MATCHA_LIVE_CHECK_S", FAR_OFF_S)
    monkeypatch.setenv("MATCHA_LIVE_CHECK_DOWN_S", FAR_OFF_S)
    own_redis = RedisProcess(tmp_path)
    own_redis.start()
    try:
        settings = settings_for(database_url, own_redis.url, redis_prefix)
        async with (
            serve_in_process(settings) as server,
            httpx.AsyncClient(base_url=f"http://{server}", timeout=30) as client,
        ):
            driver = Driver(client)
            rng = random.Random(30)
            match_id, a, b = await driver.new_match()
            base = f"ws://{server}/api/matches/{match_id}/ws"
            spectator = await Watcher(base, hello={"kind": "hello"}).start()
            await until(lambda: _pattern_subscribers(own_redis.url) >= 1, "the hub subscribed")
            for _ in range(4):
                await driver.step(match_id, (a, b), rng)
            version = (await store.load(match_id))[-1].version
            await spectator.until_version(version)  # hints flow

            own_redis.stop()  # SIGKILL: the hub's connection breaks
            for _ in range(6):  # accepted with the broker gone; no hint goes out
                assert await driver.step(match_id, (a, b), rng) > 0
            during = (await store.load(match_id))[-1].version
            assert spectator.last_version < during, "no hint reached it while Redis was down"

            own_redis.start()
            started = time.monotonic()
            # The subscription is placed again (with backoff) and the sweep reads the
            # store: the spectator has every event of the outage long before any check.
            await spectator.until_version(during, timeout=15)
            assert time.monotonic() - started < float(FAR_OFF_S) / 4
            assert _pattern_subscribers(own_redis.url) >= 1

            await driver.play_out(match_id, (a, b), rng)  # and hints flow again
            stored = await store.load(match_id)
            await spectator.until_version(stored[-1].version, timeout=15)
            assert spectator.versions == list(range(1, stored[-1].version + 1))
            await spectator.close()
    finally:
        own_redis.stop()
