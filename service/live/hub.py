"""One Redis subscription per process, fanned out to every local viewer.

A process holds a single pattern subscription (``<prefix>:live:*``) whatever
the number of viewers, and hands each hint to the bounded queue of every
local connection watching that match: 1,000 spectators of one match cost one
Redis message and 1,000 appends to their mailboxes. Because a Redis message is only
a hint, the hub also

* compares every watched match with the store now and then (more often while
  the subscription is down), and after a reconnect at once, pushing what the
  store has as an ordinary hint: streams de-duplicate by version;
* coalesces identical store reads (1,000 viewers catching up from the same
  version share one query);
* keeps presence (who is connected) in Redis, per connection, with expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from service.broker import channels
from service.broker.hints import (
    EventsHint,
    LobbySummary,
    OddsHint,
    PresenceHint,
    hint_decoder,
    hint_encoder,
)
from service.broker.publish import StoredLike
from service.live import metrics
from service.live.config import LiveSettings
from service.live.wire import PresenceFrame

log = logging.getLogger(__name__)

LoadPage = Callable[[str, int, int], Awaitable[Sequence[StoredLike]]]
"""``(match_id, after, limit)`` → stored events with version > after, in order."""

PAGE = 500


class Tick:
    """Time for an idle ping (one hub timer instead of one per connection)."""


TICK = Tick()

Item = EventsHint | PresenceFrame | LobbySummary | OddsHint | Tick


class Subscription:
    """One local connection's view of the hub: a bounded mailbox of hints.

    Not an ``asyncio.Queue``: a viewer takes everything waiting at once, and an
    offer costs one append and (when the reader sleeps) one wake-up. This is the
    hot path of a fan-out (1,000 offers per event for 1,000 spectators).
    """

    __slots__ = ("_waiter", "items", "lagging", "match_id", "size")

    def __init__(self, match_id: str | None, size: int) -> None:
        self.match_id = match_id
        self.size = size
        self.items: deque[Item] = deque()
        """Offered and not yet taken, oldest first."""
        self.lagging = False
        """Set when a hint found the mailbox full: the connection must resume with ``since``."""
        self._waiter: asyncio.Future[None] | None = None

    def offer(self, item: Item) -> None:
        if self.lagging:
            return
        if len(self.items) >= self.size:
            self.lagging = True  # the reader stops at its next item, whatever it is
        self.items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def waiter(self, timeout: float | None = None) -> asyncio.Future[None]:
        """A future done when something is offered (at once if something waits),
        or after ``timeout`` seconds. A plain future, not a coroutine: the reader
        awaits it directly (one wake-up per fan-out, nothing more)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        if self.items:
            waiter.set_result(None)
            return waiter
        self._waiter = waiter
        if timeout is not None:
            timer = loop.call_later(timeout, _wake, waiter)
            waiter.add_done_callback(lambda _w: timer.cancel())
        return waiter


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass
class _Watch:
    subs: set[Subscription] = field(default_factory=set)
    known: int | None = None
    """The highest version this process knows is committed (None: not yet read)."""
    presence: PresenceFrame | None = None
    local_members: dict[str, str] = field(default_factory=dict)
    """Presence members of this process's connections: connection id -> role."""
    recount: asyncio.Task[None] | None = None
    recent: tuple[StoredLike, ...] = ()
    """The last rows this process itself appended to the match (whole, contiguous,
    at most ``RECENT_ROWS``): a seat's stream takes them from here instead of the
    store when they reach what the hub knows is committed (``remember``)."""


RECENT_ROWS = 32
"""How many of a watched match's latest rows appended here the hub keeps."""


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
        self._load_page = load_page
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
        self._watches: dict[str, _Watch] = {}
        self._lobby: set[Subscription] = set()
        self._inflight: dict[tuple[str, int], asyncio.Task[tuple[StoredLike, ...]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._wake_checker = asyncio.Event()
        self._presence_ops: asyncio.Queue[tuple[str, str, bool]] = asyncio.Queue()
        self.connected = asyncio.Event()
        """Set while the Redis subscription is up."""
        self.process_id = uuid.uuid4().hex[:8]
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
                asyncio.create_task(self._presence_writer(), name="live-presence-writer"),
                asyncio.create_task(self._presence_loop(), name="live-presence"),
            ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.redis is None:
            return
        # Connections of this process no longer count as present.
        with contextlib.suppress(Exception):
            async with self.redis.pipeline(transaction=False) as pipe:
                for match_id, watch in self._watches.items():
                    if watch.local_members:
                        pipe.zrem(
                            channels.presence_key(self.prefix, match_id),
                            *[f"{c}|{r}" for c, r in watch.local_members.items()],
                        )
                await pipe.execute()
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

    # ---- local subscriptions -----------------------------------------------

    def subscribe(self, match_id: str) -> Subscription:
        sub = Subscription(match_id, self.settings.queue_size)
        watch = self._watches.setdefault(match_id, _Watch())
        watch.subs.add(sub)
        if watch.presence is not None:
            sub.offer(watch.presence)
        return sub

    def subscribe_lobby(self) -> Subscription:
        sub = Subscription(None, self.settings.queue_size)
        self._lobby.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub.match_id is None:
            self._lobby.discard(sub)
            return
        watch = self._watches.get(sub.match_id)
        if watch is None:
            return
        watch.subs.discard(sub)
        self._forget_if_idle(sub.match_id)

    def watching(self, match_id: str) -> int:
        watch = self._watches.get(match_id)
        return len(watch.subs) if watch else 0

    # ---- reading the store (the truth) -----------------------------------------

    def remember(self, match_id: str, rows: Sequence[StoredLike]) -> None:
        """Rows this process just committed (after commit, in version order): kept
        for the match's local viewers if anyone here watches it."""
        watch = self._watches.get(match_id)
        if watch is None or not rows:
            return
        kept = watch.recent
        if kept and kept[-1].version + 1 == rows[0].version:
            watch.recent = (*kept, *rows)[-RECENT_ROWS:]
        else:
            watch.recent = tuple(rows)[-RECENT_ROWS:]

    async def load_after(self, match_id: str, after: int) -> tuple[StoredLike, ...]:
        """Every committed event of the match after ``after`` (whole: the stream redacts).

        From this process's own latest appends when they cover everything after
        ``after`` up to the highest version the hub knows of (a seat following
        its own match on the process that took the command: no read); else from
        the store, where identical reads in flight share one query (a crowd
        catching up at once). The periodic check always reads the store.
        """
        watch = self._watches.get(match_id)
        if watch is not None and watch.recent and watch.known is not None:
            recent = watch.recent
            if recent[0].version <= after + 1 and after < recent[-1].version >= watch.known:
                metrics.recent_hits.inc()
                return tuple(r for r in recent if r.version > after)
        key = (match_id, after)
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(self._load_all(match_id, after))
            self._inflight[key] = task
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        return await asyncio.shield(task)

    async def _load_all(self, match_id: str, after: int) -> tuple[StoredLike, ...]:
        out: list[StoredLike] = []
        cursor = after
        while True:
            page = await self._load_page(match_id, cursor, PAGE)
            out.extend(page)
            if len(page) < PAGE:
                break
            cursor = page[-1].version
        watch = self._watches.get(match_id)
        if out and watch is not None and watch.known is None:
            # Only a start: a private read (one viewer's catch-up) must not advance what
            # the hub thinks every local viewer was given, or the check would skip it.
            watch.known = out[-1].version
        return tuple(out)

    def _note(self, match_id: str, version: int) -> None:
        watch = self._watches.get(match_id)
        if watch is not None and (watch.known is None or version > watch.known):
            watch.known = version

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
            if self._lobby:
                self._fan_lobby(data)
            return
        match_id = channels.match_id_of(self.prefix, name)
        # Most processes watch few matches: skip decoding the others' hints.
        if match_id is None or match_id not in self._watches:
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
                self._schedule_recount(match_id)
            case OddsHint():
                for sub in list(self._watches[match_id].subs):
                    sub.offer(hint)
            case _:
                pass

    def _fan_lobby(self, data: bytes | str) -> None:
        try:
            hint = hint_decoder.decode(data)
        except msgspec.DecodeError:
            return
        if isinstance(hint, LobbySummary):
            for sub in list(self._lobby):
                sub.offer(hint)

    def fan_events(self, hint: EventsHint) -> None:
        watch = self._watches.get(hint.match_id)
        if watch is None:
            return
        if watch.known is not None and hint.first_version > watch.known + 1:
            self._wake_checker.set()  # a gap: the checker reads it from the store once
        else:
            self._note(hint.match_id, hint.last_version)
        for sub in list(watch.subs):
            sub.offer(hint)

    # ---- idle pings ------------------------------------------------------------

    def tick(self) -> None:
        """Offer every local connection a ping tick."""
        for watch in list(self._watches.values()):
            for sub in list(watch.subs):
                sub.offer(TICK)
        for sub in list(self._lobby):
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
            for match_id in list(self._watches):
                try:
                    await self.check(match_id)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("live check of %s failed: %s", match_id, exc)

    async def check(self, match_id: str) -> None:
        """Push whatever the store has beyond what this process knows."""
        watch = self._watches.get(match_id)
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

    # ---- presence ---------------------------------------------------------------

    def join(self, match_id: str, role: str) -> str:
        """Count a connection as present (role: ``"0"``, ``"1"`` or ``"spectator"``).

        Never waits for Redis: the write is queued for the presence writer.
        """
        conn_id = f"{self.process_id}-{uuid.uuid4().hex[:10]}"
        watch = self._watches.setdefault(match_id, _Watch())
        watch.local_members[conn_id] = role
        if self.redis is not None:
            self._presence_ops.put_nowait((match_id, f"{conn_id}|{role}", True))
        return conn_id

    def leave(self, match_id: str, conn_id: str) -> None:
        watch = self._watches.get(match_id)
        if watch is None:
            return
        role = watch.local_members.pop(conn_id, None)
        if role is not None and self.redis is not None:
            self._presence_ops.put_nowait((match_id, f"{conn_id}|{role}", False))
        self._forget_if_idle(match_id)

    async def _presence_writer(self) -> None:
        """Apply joins and leaves in order, as many as are waiting in one round trip."""
        while True:
            ops = [await self._presence_ops.get()]
            while not self._presence_ops.empty():
                ops.append(self._presence_ops.get_nowait())
            expiry = self._expiry()
            ttl = int(self.settings.presence_ttl_s * 2) + 1
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for match_id, member, joined in ops:
                        key = channels.presence_key(self.prefix, match_id)
                        if joined:
                            pipe.zadd(key, {member: expiry})
                            pipe.expire(key, ttl)
                        else:
                            pipe.zrem(key, member)
                    for match_id in dict.fromkeys(op[0] for op in ops):
                        pipe.publish(
                            channels.match_channel(self.prefix, match_id),
                            hint_encoder.encode(PresenceHint(match_id=match_id)),
                        )
                    await pipe.execute()
            except Exception as exc:  # presence is a nicety: the refresher heals it later
                log.info("presence update of %d connections failed: %s", len(ops), exc)

    def _forget_if_idle(self, match_id: str) -> None:
        watch = self._watches.get(match_id)
        if watch is not None and not watch.subs and not watch.local_members:
            if watch.recount is not None:
                watch.recount.cancel()
            del self._watches[match_id]

    def _expiry(self) -> float:
        return time.time() + self.settings.presence_ttl_s

    def _schedule_recount(self, match_id: str) -> None:
        watch = self._watches.get(match_id)
        if watch is None or (watch.recount is not None and not watch.recount.done()):
            return  # a recount is already due: a burst of joins becomes one frame
        watch.recount = asyncio.create_task(self._recount(match_id))

    async def _recount(self, match_id: str, debounce: bool = True) -> None:
        if debounce:
            await asyncio.sleep(self.settings.presence_debounce_s)
        key = channels.presence_key(self.prefix, match_id)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zremrangebyscore(key, "-inf", time.time())
                pipe.zrange(key, 0, -1)
                _, members = await pipe.execute()
        except Exception as exc:
            log.info("presence read for %s failed: %s", match_id, exc)
            return
        roles = [m.decode().rsplit("|", 1)[-1] for m in members]
        frame = PresenceFrame(
            players=("0" in roles, "1" in roles), spectators=roles.count("spectator")
        )
        watch = self._watches.get(match_id)
        if watch is None or frame == watch.presence:
            return
        watch.presence = frame
        for sub in list(watch.subs):
            sub.offer(frame)

    async def _presence_loop(self) -> None:
        """Refresh this process's members before they expire; notice other processes' dead ones."""
        while True:
            await asyncio.sleep(self.settings.presence_ttl_s / 3)
            expiry = self._expiry()
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for match_id, watch in self._watches.items():
                        if watch.local_members:
                            key = channels.presence_key(self.prefix, match_id)
                            pipe.zadd(
                                key, {f"{c}|{r}": expiry for c, r in watch.local_members.items()}
                            )
                            pipe.expire(key, int(self.settings.presence_ttl_s * 2) + 1)
                    await pipe.execute()
            except Exception as exc:
                log.info("presence refresh failed: %s", exc)
            for match_id in list(self._watches):
                with contextlib.suppress(Exception):
                    await self._recount(match_id, debounce=False)
