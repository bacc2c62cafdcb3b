"""Hints that there is work: a match ended (or something followed its end).

The API publishes one on ``<prefix>:projections`` after a commit whose events
change an archive or a rating (``service.broker.wake``, an after-commit hook);
every worker subscribes (``Listener``) and wakes its
runners, which then read the log. A hint carries only the match id, and is
only ever a hint: one that is lost (Redis down, the API killed between its
commit and its publish) costs the runners' poll interval, never the work.
Every (re)subscription wakes the runners too, since hints may have been lost
while the broker was away.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from redis import Redis
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisError
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_when_event_set,
    wait_exponential,
    wait_random,
)

from service.broker.channels import projections_channel
from service.broker.pubsub import is_cluster_url, parse_cluster_url

log = logging.getLogger("matcha.workers.wake")


class Listener:
    """Subscribes to the hints and calls ``on_wake`` for each, and on each (re)connect.

    ``run`` (a daemon thread of ``matcha worker``) never exits before ``stop``:
    a broker that goes away is subscribed to again with backoff (tenacity).
    """

    def __init__(
        self,
        redis_url: str,
        prefix: str,
        on_wake: Callable[[], None],
        *,
        stop: threading.Event,
        listen_timeout_s: float = 1.0,
        channel_name: str | None = None,
    ) -> None:
        self.channel_name = channel_name or projections_channel(prefix)
        """The channel listened to (the projections' by default; the clocks' too)."""
        self.redis_url = redis_url
        self.prefix = prefix
        self.on_wake = on_wake
        self.stop = stop
        self.listen_timeout_s = listen_timeout_s
        self.connected = threading.Event()
        self.hints = 0
        self.reconnects = 0
        self._retrying = Retrying(
            retry=retry_if_exception_type((RedisError, OSError)),
            wait=wait_exponential(multiplier=0.1, max=5.0) + wait_random(0, 0.1),
            stop=stop_when_event_set(stop),
            sleep=self._pause,
            before_sleep=self._log_retry,
        )

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                pubsub = self._retrying(self._subscribe)
            except RetryError:
                return  # stopping
            try:
                self._listen(pubsub)
            except (RedisError, OSError) as exc:
                log.warning("projection hints: subscription lost (%s); subscribing again", exc)
            finally:
                self.connected.clear()
                try:
                    pubsub.close()
                except Exception:  # the connection is gone anyway
                    log.debug("closing a lost subscription failed", exc_info=True)

    def _subscribe(self) -> Any:
        if is_cluster_url(self.redis_url):
            return self._subscribe_sharded()
        client = Redis.from_url(
            self.redis_url,
            socket_connect_timeout=2.0,
            socket_timeout=5.0,
            health_check_interval=5,
        )
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(self.channel_name)
        pubsub.ping()  # a subscription that does not answer is no subscription
        self.connected.set()
        self.reconnects += 1
        self.on_wake()  # hints may have been lost while not subscribed
        return pubsub

    def _subscribe_sharded(self) -> Any:
        """On a Redis Cluster the hints go out by SPUBLISH (``service.broker``): the
        subscription is SSUBSCRIBE on the node that holds the channel's slot."""
        address = parse_cluster_url(self.redis_url)
        client = RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in address.nodes],  # type: ignore[no-untyped-call]
            username=address.username,
            password=address.password,
            ssl=address.tls,
            socket_connect_timeout=2.0,
            socket_timeout=5.0,
        )
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        pubsub.ssubscribe(self.channel_name)
        self.connected.set()
        self.reconnects += 1
        self.on_wake()  # hints may have been lost while not subscribed
        return pubsub

    def _listen(self, pubsub: Any) -> None:
        sharded = is_cluster_url(self.redis_url)
        while not self.stop.is_set():
            if sharded:
                message = pubsub.get_sharded_message(timeout=self.listen_timeout_s)
            else:
                message = pubsub.get_message(timeout=self.listen_timeout_s)
            if message is not None and message.get("type") in ("message", "smessage"):
                self.hints += 1
                self.on_wake()

    def _pause(self, seconds: float) -> None:
        self.stop.wait(seconds)

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        if state.attempt_number == 1 or wait >= 5.0:
            log.warning(
                "projection hints: Redis unreachable (%s); trying again in %.1f s", error, wait
            )


def start(listener: Listener) -> threading.Thread:
    thread = threading.Thread(target=listener.run, name="projection-hints", daemon=True)
    thread.start()
    return thread
