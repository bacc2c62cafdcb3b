"""A worker's hint listeners on the Redis Cluster (``workers/projections/wake.py``):
the API publishes its hints through the broker (SPUBLISH in the channel's slot on a
cluster), so a worker given the ``redis+cluster://`` URL must listen by SSUBSCRIBE on
that shard; a plain ``Redis.from_url`` refuses the scheme, and a plain SUBSCRIBE
never hears a sharded hint."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from service.broker.pubsub import Broker
from service.broker.wake import hint
from service.cluster.redis_nodes import RedisCluster
from workers.projections.wake import Listener, start

pytestmark = pytest.mark.timeout(60)

WAIT_S = 10.0


def test_given_a_cluster_url_when_the_api_hints_then_the_workers_listener_wakes(
    healthy_cluster: RedisCluster,
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    woken = threading.Event()
    stop = threading.Event()
    listener = Listener(healthy_cluster.url, prefix, woken.set, stop=stop, listen_timeout_s=0.2)
    thread = start(listener)
    try:
        assert listener.connected.wait(WAIT_S), "the listener never subscribed on the cluster"
        woken.clear()  # a (re)subscription wakes the runners too: only the hint counts now

        async def publish() -> None:
            broker = Broker(healthy_cluster.url)
            try:
                await hint(broker.redis, prefix, "m-1")
            finally:
                await broker.aclose()

        tries = 0
        while not woken.is_set() and tries < 20:
            asyncio.run(publish())
            woken.wait(0.5)
            tries += 1
        assert woken.is_set(), "a sharded hint never reached the worker's listener"
        assert listener.hints >= 1
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert not thread.is_alive()
