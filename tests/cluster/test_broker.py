"""service/broker/pubsub.py against real servers: sharded pub/sub on the Redis Cluster of
``make cluster``, plain pub/sub on one Redis, and a master lost in mid-stream."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import pytest
import redis
import redis.asyncio as aioredis

from service.broker.channels import match_channel
from service.broker.pubsub import (
    BadBrokerUrl,
    Broker,
    Item,
    Lost,
    Message,
    Subscribed,
    Subscriber,
    listen_blocking,
    parse_cluster_url,
)
from service.cluster.redis_nodes import RedisCluster

pytestmark = pytest.mark.timeout(120)

WAIT_S = 10.0
FAILOVER_WAIT_S = 30.0
"""A killed master is declared failed after the node timeout (1 s here), then its
replica waits for its election: a few seconds on a loaded machine."""


async def _until(
    sub: Subscriber, wanted: Callable[[Item], bool], timeout: float = WAIT_S
) -> tuple[Item, list[Item]]:
    """The first item ``wanted`` accepts, and every item seen before it."""
    seen: list[Item] = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        item = await sub.get(timeout=left)
        if item is None:
            break
        if wanted(item):
            return item, seen
        seen.append(item)
    raise AssertionError(f"not seen within {timeout:.0f}s; seen meanwhile: {seen[-20:]}")


async def _subscribed(sub: Subscriber, *channels: str) -> None:
    waiting = set(channels)
    while waiting:
        item, _ = await _until(sub, lambda i: isinstance(i, Subscribed) and i.channel in waiting)
        assert isinstance(item, Subscribed)
        waiting.discard(item.channel)


def _one_channel_per_master(cluster: RedisCluster, prefix: str) -> dict[int, str]:
    """A match channel served by each master (match ids spread over the slots)."""
    found: dict[int, str] = {}
    masters = cluster.masters()
    n = 0
    while len(found) < len(masters):
        channel = match_channel(prefix, f"m{n}")
        found.setdefault(cluster.master_of(channel), channel)
        n += 1
    return found


def _watched_shard(cluster: RedisCluster, prefix: str, name: str) -> tuple[str, int, int]:
    """A match channel, the master serving it, and that master's replica."""
    channel = match_channel(prefix, name)
    master = cluster.master_of(channel)
    (replica,) = [p for p, m in cluster.layout().items() if m == master]
    return channel, master, replica


def _shard_subscribers(cluster: RedisCluster, port: int, channel: str) -> int:
    answer = cluster.node(port).ask("PUBSUB", "SHARDNUMSUB", channel)
    return int(answer[1])


@pytest.mark.anyio
async def test_given_watchers_on_every_shard_then_each_hint_travels_only_through_its_own_shard(
    healthy_cluster: RedisCluster, redis_prefix: str
) -> None:
    cluster = healthy_cluster
    by_master = _one_channel_per_master(cluster, redis_prefix)
    channels = list(by_master.values())
    one, two, publisher = Broker(cluster.url), Broker(cluster.url), Broker(cluster.url)
    try:
        first, second = one.subscriber(), two.subscriber()
        first.add(*channels)  # a process whose viewers watch a match on every shard
        second.add(channels[0])  # another with viewers of one match only
        await first.start()
        await second.start()
        await _subscribed(first, *channels)
        await _subscribed(second, channels[0])
        assert first.healthy and second.healthy

        # Each subscription sits on the master of its channel's slot, nowhere else.
        for master, channel in by_master.items():
            expected = 2 if channel == channels[0] else 1
            assert _shard_subscribers(cluster, master, channel) == expected
            for other in set(by_master) - {master}:
                assert _shard_subscribers(cluster, other, channel) == 0

        for n, channel in enumerate(channels):
            receivers = await publisher.publish(channel, f"hint {n}".encode())
            assert receivers == (2 if n == 0 else 1), channel
        got = []
        while len(got) < len(channels):
            item, _ = await _until(first, lambda i: isinstance(i, Message))
            got.append(item)
        assert {(m.channel, m.data) for m in got if isinstance(m, Message)} == {
            (c, f"hint {n}".encode()) for n, c in enumerate(channels)
        }
        item, _ = await _until(second, lambda i: isinstance(i, Message))
        assert item == Message(channels[0], b"hint 0")
        assert await second.get(timeout=0.3) is None, "a hint of a match it does not watch"

        # Unwatching ends the subscription on its shard.
        first.discard(channels[1])
        deadline = time.monotonic() + WAIT_S
        while _shard_subscribers(cluster, cluster.master_of(channels[1]), channels[1]) != 0:
            assert time.monotonic() < deadline, "the subscription outlived its last viewer"
            await asyncio.sleep(0.05)
        assert await publisher.publish(channels[1], b"nobody") == 0
    finally:
        for broker in (one, two, publisher):
            await broker.aclose()


@pytest.mark.anyio
async def test_given_one_redis_then_the_broker_is_plain_publish_subscribe_as_before(
    redis_server_url: str, redis_prefix: str
) -> None:
    channel = match_channel(redis_prefix, "single")
    broker = Broker(redis_server_url)
    plain = aioredis.Redis.from_url(redis_server_url)
    listener = plain.pubsub()
    try:
        assert not broker.sharded
        sub = broker.subscriber()
        sub.add(channel)
        await sub.start()
        await _subscribed(sub, channel)
        await listener.subscribe(channel)  # a client as the hub and the workers are today
        assert (await listener.get_message(timeout=WAIT_S) or {}).get("type") == "subscribe"

        assert await broker.publish(channel, b"from the broker") == 2
        heard = await listener.get_message(timeout=WAIT_S)
        assert heard is not None and heard["type"] == "message"
        assert heard["data"] == b"from the broker"
        item, _ = await _until(sub, lambda i: isinstance(i, Message))
        assert item == Message(channel, b"from the broker")

        await plain.publish(channel, b"from a plain PUBLISH")
        item, _ = await _until(sub, lambda i: isinstance(i, Message))
        assert item == Message(channel, b"from a plain PUBLISH")
        assert int((await plain.pubsub_numsub(channel))[0][1]) == 2
    finally:
        await listener.aclose()
        await plain.aclose()
        await broker.aclose()


@pytest.mark.anyio
async def test_given_a_master_killed_mid_stream_then_its_replica_serves_and_the_watcher_resumes(
    healthy_cluster: RedisCluster, redis_prefix: str
) -> None:
    cluster = healthy_cluster
    channel, master, replica = _watched_shard(cluster, redis_prefix, "kill-its-master")
    watcher, publisher = Broker(cluster.url), Broker(cluster.url)
    sent: list[int] = []
    stop = asyncio.Event()

    async def publish_a_hint_every_20_ms() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            with contextlib.suppress(Exception):  # while the shard has no master
                if await publisher.publish(channel, str(n).encode()) > 0:
                    sent.append(n)
            await asyncio.sleep(0.02)

    sub = watcher.subscriber()
    sub.add(channel)
    await sub.start()
    stream = asyncio.create_task(publish_a_hint_every_20_ms())
    try:
        await _subscribed(sub, channel)
        await _until(sub, lambda i: isinstance(i, Message))  # hints are flowing
        cluster.kill(master)

        lost, _ = await _until(sub, lambda i: isinstance(i, Lost), FAILOVER_WAIT_S)
        assert isinstance(lost, Lost) and lost.channel == channel
        assert not sub.healthy
        back, _ = await _until(sub, lambda i: isinstance(i, Subscribed), FAILOVER_WAIT_S)
        assert back == Subscribed(channel)
        resumed_after = max(sent, default=0)
        await _until(sub, lambda i: isinstance(i, Message) and int(i.data) > resumed_after)
        assert sub.healthy
        assert cluster.master_of(channel) == replica, "the replica serves the slot now"
        assert _shard_subscribers(cluster, replica, channel) == 1
    finally:
        stop.set()
        await stream
        await watcher.aclose()
        await publisher.aclose()


@pytest.mark.anyio
async def test_given_an_operators_failover_then_the_subscription_follows_the_slot(
    healthy_cluster: RedisCluster, redis_prefix: str
) -> None:
    cluster = healthy_cluster
    channel, _, replica = _watched_shard(cluster, redis_prefix, "manual-failover")
    watcher, publisher = Broker(cluster.url), Broker(cluster.url)
    try:
        sub = watcher.subscriber()
        sub.add(channel)
        await sub.start()
        await _subscribed(sub, channel)
        # the old master stays up, as a replica: it tells its subscribers it let go
        cluster.node(replica).ask("CLUSTER", "FAILOVER")
        lost, _ = await _until(sub, lambda i: isinstance(i, Lost), FAILOVER_WAIT_S)
        assert isinstance(lost, Lost) and "slot moved" in lost.reason
        await _until(sub, lambda i: isinstance(i, Subscribed), FAILOVER_WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while cluster.master_of(channel) != replica:  # every node learns it by gossip
            assert time.monotonic() < deadline, cluster.layout()
            await asyncio.sleep(0.05)
        assert await publisher.publish(channel, b"after the failover") == 1
        item, _ = await _until(sub, lambda i: isinstance(i, Message))
        assert item == Message(channel, b"after the failover")
    finally:
        await watcher.aclose()
        await publisher.aclose()
        cluster.wait_healthy()


def test_given_a_worker_thread_listening_then_it_gets_the_hints_until_stopped(
    healthy_cluster: RedisCluster, redis_prefix: str
) -> None:
    import threading

    channel = f"{redis_prefix}:projections"
    items: list[Item] = []
    arrived = threading.Event()
    stop = threading.Event()

    def on_item(item: Item) -> None:
        items.append(item)
        arrived.set()

    thread = threading.Thread(
        target=listen_blocking,
        args=(healthy_cluster.url, [channel], on_item),
        kwargs={"stop": stop},
    )
    thread.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while Subscribed(channel) not in items:
            assert arrived.wait(max(0.0, deadline - time.monotonic())), items
            arrived.clear()
        client = redis.RedisCluster.from_url(
            f"redis://127.0.0.1:{healthy_cluster.ports[0]}/0", socket_timeout=5
        )
        try:
            assert client.spublish(channel, b"match-1") == 1
        finally:
            client.close()
        while Message(channel, b"match-1") not in items:
            assert arrived.wait(max(0.0, deadline - time.monotonic())), items
            arrived.clear()
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert not thread.is_alive()


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("redis+cluster://", "at least one node"),
        ("redis+cluster://127.0.0.1", "host:port"),
        ("redis+cluster://127.0.0.1:7001,:7002", "host:port"),
        ("redis+cluster://127.0.0.1:7001/3", "only database 0"),
        ("redis://127.0.0.1:6379/0", "not a cluster URL"),
    ],
)
def test_given_a_broken_cluster_url_then_it_is_refused_saying_what_is_wrong(
    url: str, complaint: str
) -> None:
    with pytest.raises(BadBrokerUrl, match=complaint):
        parse_cluster_url(url)


def test_given_a_cluster_url_then_its_nodes_are_read_and_plain_clients_refuse_it() -> None:
    address = parse_cluster_url("rediss+cluster://app:s%3Acret@10.0.0.1:7001,redis-2:7002/0")
    assert address.nodes == (("10.0.0.1", 7001), ("redis-2", 7002))
    assert (address.username, address.password, address.tls) == ("app", "s:cret", True)
    with pytest.raises(ValueError, match="scheme"):
        redis.Redis.from_url("redis+cluster://127.0.0.1:7001")


@pytest.mark.anyio
async def test_given_a_cluster_then_the_parts_client_publishes_sharded_in_pipelines_and_listens(
    healthy_cluster: RedisCluster, redis_prefix: str
) -> None:
    """``Broker.redis`` as presence, the odds and the tournaments' hints use it: keys
    through the cluster client, every ``publish`` (one, or among a pipeline's
    commands, its answer in its place) by ``SPUBLISH``, ``pubsub()`` a broker
    subscriber. A plain ``PUBLISH`` would not reach a sharded subscriber at all."""
    cluster = healthy_cluster
    channels = list(_one_channel_per_master(cluster, redis_prefix).values())
    parts, watcher = Broker(cluster.url), Broker(cluster.url)
    try:
        sub = watcher.subscriber()
        sub.add(*channels)
        await sub.start()
        await _subscribed(sub, *channels)

        assert await parts.client.publish(channels[0], b"plain") == 0  # the trap avoided
        assert await parts.redis.publish(channels[0], "one") == 1
        item, _ = await _until(sub, lambda i: isinstance(i, Message))
        assert item == Message(channels[0], b"one")

        key = f"{redis_prefix}:presence:pipelined"
        async with parts.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {"conn|spectator": 1.0})
            pipe.publish(channels[1], b"two")
            pipe.expire(key, 60)
            pipe.publish(channels[2], b"three")
            answers = await pipe.execute()
        assert answers == [1, 1, True, 1]
        assert await parts.redis.zrange(key, 0, -1) == [b"conn|spectator"]
        got = set()
        while len(got) < 2:
            item, _ = await _until(sub, lambda i: isinstance(i, Message))
            assert isinstance(item, Message)
            got.add((item.channel, item.data))
        assert got == {(channels[1], b"two"), (channels[2], b"three")}

        # A part's own listener (the tournaments' hints) through ``pubsub()``.
        listener = parts.redis.pubsub()
        await listener.subscribe(f"{redis_prefix}:tournaments:moved")
        deadline = time.monotonic() + WAIT_S
        while (await listener.get_message(timeout=0.5) or {}).get("type") != "subscribe":
            assert time.monotonic() < deadline, "the listener was never subscribed"
        await watcher.redis.publish(f"{redis_prefix}:tournaments:moved", "t-1")
        message = await listener.get_message(ignore_subscribe_messages=True, timeout=WAIT_S)
        assert message is not None and message["data"] == b"t-1"
        await listener.aclose()
    finally:
        await parts.aclose()
        await watcher.aclose()


@pytest.mark.anyio
async def test_given_one_redis_then_the_parts_client_is_the_plain_client_unchanged(
    redis_server_url: str,
) -> None:
    broker = Broker(redis_server_url)
    try:
        assert broker.redis is broker.client
        assert isinstance(broker.client, aioredis.Redis)
        with pytest.raises(ValueError, match="no pattern"):
            Broker("redis+cluster://127.0.0.1:1").subscriber().add_pattern("x:*")
    finally:
        await broker.aclose()


@pytest.mark.anyio
async def test_given_a_hint_handler_then_hints_skip_the_queue_and_its_failure_loses_nothing(
    redis_server_url: str, redis_prefix: str
) -> None:
    """The live hub's way (``subscriber(on_message=...)``): each hint is handed over in
    the reading task; a handler that raises is the owner's bug, not a lost connection:
    the subscription stays and the next hint arrives."""
    channel = match_channel(redis_prefix, "handled")
    got: list[tuple[str, bytes]] = []

    def handle(name: str, data: bytes) -> None:
        if data == b"bad":
            raise RuntimeError("a bug in the owner")
        got.append((name, data))

    broker, publisher = Broker(redis_server_url), Broker(redis_server_url)
    try:
        sub = broker.subscriber(on_message=handle)
        sub.add_pattern(f"{redis_prefix}:live:*")
        await sub.start()
        await _subscribed(sub, f"{redis_prefix}:live:*")
        for data in (b"one", b"bad", b"two"):
            assert await publisher.publish(channel, data) == 1
        deadline = time.monotonic() + WAIT_S
        while len(got) < 2:
            assert time.monotonic() < deadline, got
            await asyncio.sleep(0.02)
        assert got == [(channel, b"one"), (channel, b"two")]
        assert await sub.get(timeout=0.2) is None, "no Lost, no queued Message"
        assert sub.healthy
    finally:
        await broker.aclose()
        await publisher.aclose()
