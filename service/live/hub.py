"""One Redis subscription per process, fanned out to every local viewer.

A process holds a single pattern subscription (``<prefix>:live:*``) whatever
the number of viewers, and hands each hint to the bounded mailbox of every
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
import random
import uuid
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from service.broker import channels
from service.broker.hints import EventsHint, LobbySummary, OddsHint, PresenceHint, hint_decoder
from service.live import metrics
from service.live.catchup import CatchUp, LoadPage
from service.live.config import LiveSettings
from service.live.mailbox import TICK
from service.live.presence import Presence
from service.live.watches import Watches

log = logging.getLogger(__name__)


class Hub:
    def __init__(
        self,
        *,
        redis_url: str | None,
        prefix: str,
        load_page: LoadPage,
        settings: LiveSettings | None = None,
    ) -> None:
        self.prefix = prefix
        self.settings = settings or LiveSettings()
        # Our own client: the subscription must fail loudly (no silent retries)
        # so that we know when to refill, and presence must not wait on a dead server.
        # Without Redis (no URL) the hub still works: it polls the store.
        self.redis: Any = None
        if redis_url:
            self.redis = aioredis.Redis.from_url(
                redis_url,
                retry=Retry(NoBackoff(), 0),
                socket_connect_timeout=2,
                socket_timeout=5,
                health_check_interval=5,
            )
        self._watches = Watches(self.settings.queue_size)
        self._catch_up = CatchUp(self._watches, load_page)
        self.process_id = uuid.uuid4().hex[:8]
        self._presence = Presence(self._watches, self.redis, prefix, self.settings, self.process_id)
        # The hub's surface, bound once (no call of the hub's own in between:
        # a viewer's subscribe and catch-up are on every stream's path).
        self.subscribe = self._watches.subscribe
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
        if self.redis is not None:
            self._tasks += [
                asyncio.create_task(self._listen(), name="live-listen"),
                asyncio.create_task(self._presence.write(), name="live-presence-writer"),
                asyncio.create_task(self._presence.refresh(), name="live-presence"),
            ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.redis is None:
            return
        await self._presence.leave_all()
        await self.redis.aclose()

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

    async def _listen(self) -> None:
        delay = 0.1
        first = True
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.psubscribe(channels.pattern(self.prefix))
                # The confirmation proves the subscription is live before we say so.
                while True:
                    msg = await pubsub.get_message(timeout=5.0)
                    if msg is not None and msg["type"] == "psubscribe":
                        break
                    if msg is None:
                        raise ConnectionError("no psubscribe confirmation")
                self.connected.set()
                if not first:
                    log.info("live subscription restored; refilling every watched match")
                    self._wake_checker.set()
                first = False
                delay = 0.1
                while True:
                    msg = await pubsub.get_message(timeout=10.0)
                    if msg is None:
                        await pubsub.ping()  # a half-open connection shows up here
                        continue
                    if msg["type"] == "pmessage":
                        self._dispatch(msg["channel"], msg["data"])
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                raise
            except Exception as exc:
                if self.connected.is_set() or first:
                    log.warning("live subscription lost (%s); retrying with backoff", exc)
                    metrics.subscription_drops.inc()
                self.connected.clear()
                self._wake_checker.set()
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                await asyncio.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 5.0)

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
