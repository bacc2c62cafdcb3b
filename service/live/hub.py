"""One Redis subscription per process, fanned out to every local viewer.

A process subscribes through its one broker (``service.broker.pubsub``): on one
Redis a single pattern subscription (``<prefix>:live:*``) whatever the number
of viewers; on a Redis Cluster (sharded pub/sub has no patterns) the lobby's
channel and one per watched match, on the shard of its slot. Either way it
hands each hint to the bounded mailbox of every
local connection watching that match (``mailbox``): 1,000 spectators of one
match cost one Redis message and 1,000 appends to their mailboxes. Because a
Redis message is only a hint, the hub also

* compares every watched match with the store now and then (more often while
  the subscription is down), and after a reconnect at once, pushing what the
  store has as an ordinary hint: streams de-duplicate by version;
* reads the store for its viewers through one ``CatchUp`` (identical reads
  coalesced, this process's own latest appends kept: ``catchup``);
* keeps presence (who is connected) in Redis, per connection, with expiry
  (``presence``).

What it knows per watched match is ``watches``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

import msgspec
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from service.broker import channels
from service.broker.hints import EventsHint, LobbySummary, OddsHint, PresenceHint, hint_decoder
from service.broker.pubsub import Broker, Lost, Message, Subscribed, Subscriber, is_cluster_url
from service.live import metrics
from service.live.catchup import CatchUp, LoadPage
from service.live.config import LiveSettings
from service.live.mailbox import TICK, Subscription
from service.live.presence import Presence
from service.live.watches import Watches

log = logging.getLogger(__name__)


def _own_client_options(url: str) -> dict[str, Any]:
    """A hub's own broker (tests): presence must not wait on a dead server."""
    if is_cluster_url(url):
        return {}
    return {"retry": Retry(NoBackoff(), 0), "socket_connect_timeout": 2, "health_check_interval": 5}


class Hub:
    def __init__(
        self,
        *,
        redis_url: str | None = None,
        broker: Broker | None = None,
        prefix: str,
        load_page: LoadPage,
        settings: LiveSettings | None = None,
    ) -> None:
        self.prefix = prefix
        self.settings = settings or LiveSettings()
        # The process's broker (or, given a URL alone, one of the hub's own): its
        # subscriber fails loudly, so that we know when to refill, and it holds the
        # hub's channels over one Redis or a cluster's shards. Without Redis (no
        # broker, no URL) the hub still works: it polls the store.
        self._own_broker = broker is None and bool(redis_url)
        if broker is None and redis_url:
            broker = Broker(redis_url, **_own_client_options(redis_url))
        self.broker = broker
        self.redis: Any = broker.redis if broker is not None else None
        self._subscriber: Subscriber | None = None
        self._sweeps: set[asyncio.Task[None]] = set()
        self._watches = Watches(self.settings.queue_size)
        self._catch_up = CatchUp(self._watches, load_page)
        self.process_id = uuid.uuid4().hex[:8]
        self._presence = Presence(self._watches, self.redis, prefix, self.settings, self.process_id)
        # The hub's surface, bound once (no call of the hub's own in between:
        # a viewer's subscribe and catch-up are on every stream's path).
        self.subscribe = self._watches.subscribe
        if broker is not None and broker.sharded:
            self.subscribe = self._subscribe_sharded
        self.subscribe_lobby = self._watches.subscribe_lobby
        self.unsubscribe = self._watches.unsubscribe
        self.watching = self._watches.watching
        self.remember = self._catch_up.remember
        self.load_after = self._catch_up.load_after
        self.join = self._presence.join
        self.leave = self._presence.leave
        self._tasks: list[asyncio.Task[None]] = []
        self._wake_checker = asyncio.Event()
        self.connected = asyncio.Event()
        """Set while the Redis subscription is up."""
        self.stopping = False
        """Set by ``close_all``: every local stream ends (the process is stopping)."""
        self.stopped = asyncio.Event()
        """The same, for a stream that must wait on something else meanwhile."""

    # ---- lifecycle ----------------------------------------------------------

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._check_loop(), name="live-check"),
            asyncio.create_task(self._tick_loop(), name="live-tick"),
        ]
        if self.broker is not None:
            # hints straight to the fan-out, in the reading task (no queue per hint)
            self._subscriber = self.broker.subscriber(on_message=self._dispatch)
            self._tasks += [
                asyncio.create_task(self._listen(self._subscriber), name="live-listen"),
                asyncio.create_task(self._presence.write(), name="live-presence-writer"),
                asyncio.create_task(self._presence.refresh(), name="live-presence"),
            ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for sweep in list(self._sweeps):
            sweep.cancel()
        if self.broker is None:
            return
        await self._presence.leave_all()
        if self._subscriber is not None:
            await self._subscriber.aclose()
        if self._own_broker:
            await self.broker.aclose()

    def close_all(self) -> None:
        """The process is stopping: every local stream ends now and says how to resume.

        Each connection is woken with a tick; its sender sees ``stopping`` before
        it takes anything and closes (WebSocket 1012, SSE a last message with a
        retry hint; ``service.live.routes``). Streams opened from now on end at once.
        Runs on the event loop (``service.ops.stopping`` schedules it there).
        """
        self.stopping = True
        self.stopped.set()
        self.tick()

    # ---- the subscription ---------------------------------------------------

    # The subscriber seam: what this process subscribes to, through the broker.
    # On one Redis, one pattern for every match and the lobby (as always); on a
    # cluster, sharded pub/sub has no patterns: the lobby's channel and each
    # watched match's, added when its first local viewer subscribes and dropped
    # by the checker once nobody here watches it.

    def _subscribe_sharded(self, match_id: str) -> Subscription:
        sub = self._watches.subscribe(match_id)
        if self._subscriber is not None:
            self._subscriber.add(channels.match_channel(self.prefix, match_id))
        return sub

    def _wanted_channels(self) -> None:
        """Sharded: drop the channels of the matches nobody here watches any more."""
        if self._subscriber is None or self.broker is None or not self.broker.sharded:
            return
        head = channels.match_channel(self.prefix, "")
        idle = [
            name
            for name in self._subscriber.wanted
            if name.startswith(head) and name[len(head) :] not in self._watches.matches
        ]
        self._subscriber.discard(*idle)

    async def _listen(self, subscriber: Subscriber) -> None:
        lobby = channels.lobby_channel(self.prefix)
        if self.broker is not None and self.broker.sharded:
            subscriber.add(
                lobby, *(channels.match_channel(self.prefix, m) for m in self._watches.matches)
            )
        else:
            subscriber.add_pattern(channels.pattern(self.prefix))
        await subscriber.start()
        first = True
        async for item in subscriber:
            match item:
                case Message(channel=channel, data=data):
                    self._dispatch(channel, data)
                case Subscribed(channel=channel):
                    # The confirmation proves the subscription is live before we say so;
                    # what was committed before it is read from the store (a sweep).
                    if subscriber.healthy:
                        self.connected.set()
                    match_id = channels.match_id_of(self.prefix, channel)
                    if match_id is not None:
                        self._sweep(match_id)
                    elif not first:
                        log.info("live subscription restored; refilling every watched match")
                        self._wake_checker.set()
                    first = False
                case Lost(channel=channel, reason=reason):
                    if self.connected.is_set():
                        log.warning("live subscription lost (%s); retrying with backoff", reason)
                        metrics.subscription_drops.inc()
                    self.connected.clear()
                    self._wake_checker.set()

    def _sweep(self, match_id: str) -> None:
        """A match's channel is (again) subscribed: read what the store has beyond
        what this process knows, for hints sent while it was not."""
        task = asyncio.create_task(self._checked(match_id))
        self._sweeps.add(task)
        task.add_done_callback(self._sweeps.discard)

    async def _checked(self, match_id: str) -> None:
        try:
            await self.check(match_id)
        except Exception as exc:
            log.warning("live check of %s failed: %s", match_id, exc)

    def _dispatch(self, channel: bytes | str, data: bytes | str) -> None:
        name = channel.decode() if isinstance(channel, bytes) else channel
        if name == channels.lobby_channel(self.prefix):
            if self._watches.lobby:
                self._fan_lobby(data)
            return
        match_id = channels.match_id_of(self.prefix, name)
        # Most processes watch few matches: skip decoding the others' hints.
        if match_id is None or match_id not in self._watches.matches:
            return
        try:
            hint = hint_decoder.decode(data)
        except msgspec.DecodeError:
            log.warning("undecodable live hint on %s", name)
            return
        match hint:
            case EventsHint():
                self.fan_events(hint)
            case PresenceHint():
                self._presence.schedule_recount(match_id)
            case OddsHint():
                for sub in list(self._watches.matches[match_id].subs):
                    sub.offer(hint)
            case _:
                pass

    def _fan_lobby(self, data: bytes | str) -> None:
        try:
            hint = hint_decoder.decode(data)
        except msgspec.DecodeError:
            return
        if isinstance(hint, LobbySummary):
            for sub in list(self._watches.lobby):
                sub.offer(hint)

    def fan_events(self, hint: EventsHint) -> None:
        watch = self._watches.matches.get(hint.match_id)
        if watch is None:
            return
        if watch.known is not None and hint.first_version > watch.known + 1:
            self._wake_checker.set()  # a gap: the checker reads it from the store once
        else:
            self._watches.note(hint.match_id, hint.last_version)
        for sub in list(watch.subs):
            sub.offer(hint)

    # ---- idle pings ------------------------------------------------------------

    def tick(self) -> None:
        """Offer every local connection a ping tick."""
        for watch in list(self._watches.matches.values()):
            for sub in list(watch.subs):
                sub.offer(TICK)
        for sub in list(self._watches.lobby):
            sub.offer(TICK)

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.ping_s)
            self.tick()

    # ---- the periodic check against the store -------------------------------

    async def _check_loop(self) -> None:
        while True:
            interval = (
                self.settings.check_s if self.connected.is_set() else self.settings.check_degraded_s
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake_checker.wait(), interval)
            self._wake_checker.clear()
            self._wanted_channels()
            for match_id in list(self._watches.matches):
                try:
                    await self.check(match_id)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("live check of %s failed: %s", match_id, exc)

    async def check(self, match_id: str) -> None:
        """Push whatever the store has beyond what this process knows."""
        watch = self._watches.matches.get(match_id)
        if watch is None or not watch.subs:
            return
        # Not known yet (viewers that caught up to nothing new): read it all once.
        events = await self.load_after(match_id, watch.known or 0)
        if events:
            metrics.refills.labels("check").inc()
            # A hint naming the versions only: each stream reads them from the
            # store (one shared query per resume point) and redacts for its viewer.
            self.fan_events(
                EventsHint(
                    match_id=match_id,
                    first_version=events[0].version,
                    last_version=events[-1].version,
                )
            )
