"""The live hub on the Redis Cluster (``service/live/hub.py``'s subscriber seam): two
hubs, as two API processes, each subscribed only to the matches its viewers watch,
each on the shard of the match's slot; a hint published by the process's client
(``Broker.redis``, as the publisher does) reaches the hubs that watch it and no
other; a first subscription is swept (the store read for what came before it);
a match nobody watches any more is unsubscribed on its shard."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from service.broker.channels import lobby_channel, match_channel
from service.broker.hints import EventsHint, hint_encoder
from service.broker.pubsub import Broker
from service.cluster.redis_nodes import RedisCluster
from service.live.config import LiveSettings
from service.live.hub import Hub
from service.live.mailbox import Subscription

pytestmark = [pytest.mark.timeout(120), pytest.mark.anyio]

WAIT_S = 10.0


class _Row:
    def __init__(self, version: int) -> None:
        self.version = version
        self.event: Any = None
        self.recorded_at = datetime.now(UTC)


def _store(committed: dict[str, int]) -> Callable[[str, int, int], Any]:
    """A store whose matches have ``committed[match]`` events (versions 1..n)."""

    async def load_page(match_id: str, after: int, limit: int) -> list[_Row]:
        top = committed.get(match_id, 0)
        return [_Row(v) for v in range(after + 1, min(top, after + limit) + 1)]

    return load_page


async def _until(holds: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not holds():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


def _hints(sub: Subscription) -> list[tuple[int, int]]:
    return [(i.first_version, i.last_version) for i in sub.items if isinstance(i, EventsHint)]


def _subscribers(cluster: RedisCluster, channel: str) -> int:
    answer = cluster.node(cluster.master_of(channel)).ask("PUBSUB", "SHARDNUMSUB", channel)
    return int(answer[1])


def _on_two_masters(cluster: RedisCluster, prefix: str) -> tuple[str, str]:
    """Two match ids whose channels are served by two different masters."""
    first = "m0"
    n = 1
    while cluster.master_of(match_channel(prefix, f"m{n}")) == cluster.master_of(
        match_channel(prefix, first)
    ):
        n += 1
    return first, f"m{n}"


async def test_given_two_hubs_on_the_cluster_then_each_holds_only_its_matches_on_their_shards(
    healthy_cluster: RedisCluster, redis_prefix: str
) -> None:
    cluster = healthy_cluster
    one_match, other_match = _on_two_masters(cluster, redis_prefix)
    committed = {one_match: 3, other_match: 1}
    settings = LiveSettings(check_s=0.3, check_degraded_s=0.3)
    brokers = [Broker(cluster.url), Broker(cluster.url)]
    hubs = [
        Hub(broker=b, prefix=redis_prefix, load_page=_store(committed), settings=settings)
        for b in brokers
    ]
    try:
        for hub in hubs:
            await hub.start()
        await _until(lambda: all(h.connected.is_set() for h in hubs), "the lobby's channel")
        assert _subscribers(cluster, lobby_channel(redis_prefix)) == 2

        # API 1's viewer watches one match; API 2's the other.
        first = hubs[0].subscribe(one_match)
        second = hubs[1].subscribe(other_match)
        one, other = (
            match_channel(redis_prefix, one_match),
            match_channel(redis_prefix, other_match),
        )
        await _until(lambda: _subscribers(cluster, one) == 1, "API 1 on its match's shard")
        await _until(lambda: _subscribers(cluster, other) == 1, "API 2 on its match's shard")
        # The first subscription is swept: what was committed before it, from the store.
        await _until(lambda: (1, 3) in _hints(first), "the sweep of API 1's match")
        await _until(lambda: (1, 1) in _hints(second), "the sweep of API 2's match")

        # A hint (sent as the publisher sends it) reaches only the hub that watches it.
        committed[one_match] = 4
        hint = EventsHint(match_id=one_match, first_version=4, last_version=4)
        assert await brokers[1].redis.publish(one, hint_encoder.encode(hint)) == 1
        await _until(lambda: (4, 4) in _hints(first), "the hint of API 1's match")
        assert (4, 4) not in _hints(second)

        # Nobody watches it any more: its shard drops the subscription (at the next check).
        hubs[0].unsubscribe(first)
        await _until(
            lambda: _subscribers(cluster, one) == 0, "the subscription outlived its viewer"
        )
        assert _subscribers(cluster, other) == 1
    finally:
        for hub in hubs:
            await hub.stop()
        for broker in brokers:
            await broker.aclose()
