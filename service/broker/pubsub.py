"""The broker of live hints, on one Redis or on a Redis Cluster: one interface for both.

A hint says a match moved; it is published on the match's channel after the
commit, and every process with a viewer of that match subscribes to it. Which
Redis carries it follows from the URL (``REDIS_URL``, read once at start):

* ``redis://host:port/0`` (the default): one Redis, plain ``PUBLISH`` /
  ``SUBSCRIBE``, as the service has always done.
* ``redis+cluster://host:port,host:port,...`` (``rediss+cluster://`` for TLS,
  ``user:password@`` as usual): a Redis Cluster, every node listed a seed
  (one is enough; the others let a process start while that one is down).
  Hints use **sharded pub/sub** (Redis 7: ``SPUBLISH`` / ``SSUBSCRIBE``): a
  channel lives in the hash slot of its name, so a match's hints travel only
  through the shard that owns its slot, and only to the processes watching
  it, where plain pub/sub on a cluster copies every message to every node.
  Fan-out capacity then grows with the shards. A plain Redis client refuses
  this URL, so nothing can talk to a single node of the cluster by mistake.

``Broker.publish`` sends a hint; ``Broker.subscriber()`` holds a set of
channels (``add`` / ``discard``, at any time, from synchronous code) and
yields what happens to them:

* ``Subscribed(channel)``: the server confirmed the subscription, at the
  start or again after it was lost. Hints published before may be missed:
  read the truth (the event store) for that channel now.
* ``Message(channel, data)``: a hint.
* ``Lost(channel, reason)``: the subscription is gone (the node died, its
  slot moved to another master, the connection broke); it is placed again
  by itself, with backoff (a jittered doubling from 0.1 s to 2 s), on
  whichever node serves it by then, and a ``Subscribed`` follows.

Each cluster node holds one subscriber connection per process (``SSUBSCRIBE``
wants the channels of one command in one slot, so each channel is its own
command on that connection). When a master fails, its replica takes over
(``cluster-node-timeout`` later, about twice it); the subscriber sees the
connection break or the server's own ``SUNSUBSCRIBE``, asks the cluster who
serves the slot now, and subscribes there. A silent connection is pinged
every ``PING_EVERY_S`` and dropped when no answer comes in as long again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError

log = logging.getLogger(__name__)

CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}
"""URL scheme -> TLS."""

PING_EVERY_S = 5.0
"""A subscriber connection that received nothing this long is pinged."""
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 2.0
CONNECT_TIMEOUT_S = 2.0
COMMAND_TIMEOUT_S = 5.0


class Subscribed(msgspec.Struct, frozen=True, tag=True):
    channel: str


class Message(msgspec.Struct, frozen=True, tag=True):
    channel: str
    data: bytes


class Lost(msgspec.Struct, frozen=True, tag=True):
    channel: str
    reason: str


Item = Subscribed | Message | Lost


class BadBrokerUrl(ValueError):
    """A ``redis+cluster://`` URL that names no node, or a database other than 0."""


@dataclass(frozen=True)
class ClusterAddress:
    nodes: tuple[tuple[str, int], ...]
    username: str | None = None
    password: str | None = None
    tls: bool = False


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def parse_cluster_url(url: str) -> ClusterAddress:
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        raise BadBrokerUrl(f"not a cluster URL (redis+cluster://host:port,...): {url!r}")
    credentials, _, hosts = parts.netloc.rpartition("@")
    username = password = None
    if credentials:
        user, _, secret = credentials.partition(":")
        username, password = unquote(user) or None, unquote(secret) or None
    nodes = []
    for item in filter(None, hosts.split(",")):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise BadBrokerUrl(f"{item!r} in the cluster URL is not host:port")
        nodes.append((host.strip("[]"), int(port)))
    if not nodes:
        raise BadBrokerUrl("a cluster URL names at least one node: redis+cluster://host:port")
    if parts.path not in ("", "/", "/0"):
        raise BadBrokerUrl(f"a Redis Cluster has only database 0, not {parts.path.lstrip('/')}")
    return ClusterAddress(tuple(nodes), username, password, CLUSTER_SCHEMES[parts.scheme])


def connect(url: str, **options: Any) -> Any:
    """The async client for commands (keys, publishing): ``redis.asyncio.Redis`` for
    one node, ``redis.asyncio.cluster.RedisCluster`` for a cluster URL (it follows
    the slots, and MOVED answers, by itself). ``options``: socket timeouts and such."""
    if not is_cluster_url(url):
        return aioredis.Redis.from_url(url, **options)
    address = parse_cluster_url(url)
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in address.nodes],
        username=address.username,
        password=address.password,
        ssl=address.tls,
        **options,
    )


class Broker:
    """Publishing and subscribing for one process; ``aclose`` at the end.

    ``client`` is the command client (``redis.asyncio.Redis`` or ``RedisCluster``);
    ``redis`` is what the parts that keep keys and publish hints are given (presence,
    the odds, the tournaments' and the workers' hints): on one Redis the client itself,
    exactly as before; on a cluster a ``ShardedCommands`` over it, whose ``publish``
    (in a pipeline too) is the broker's sharded one and whose ``pubsub()``
    subscribes through the broker, so no part needs to know which it has.
    ``options`` go to the command client (timeouts, a health check interval)."""

    def __init__(self, url: str, *, client: Any = None, **options: Any) -> None:
        self.url = url
        self.sharded = is_cluster_url(url)
        self.address = parse_cluster_url(url) if self.sharded else None
        options = {
            "socket_connect_timeout": CONNECT_TIMEOUT_S,
            "socket_timeout": COMMAND_TIMEOUT_S,
            **options,
        }
        self.client: Any = client or connect(url, **options)
        self.redis: Any = ShardedCommands(self) if self.sharded else self.client
        self._subscribers: list[Subscriber] = []

    async def publish(self, channel: str, payload: bytes) -> int:
        """Send one hint; the number of subscriber connections that got it.
        Raises what Redis raises: callers decide what a lost hint costs."""
        if self.sharded:
            return int(await self.client.spublish(channel, payload))
        return int(await self.client.publish(channel, payload))

    def subscriber(self, on_message: Callable[[str, bytes], None] | None = None) -> Subscriber:
        """A new set of channels to keep subscribed; ``on_message``: see ``Subscriber``."""
        sub = Subscriber(self, on_message)
        self._subscribers.append(sub)
        return sub

    async def aclose(self) -> None:
        for sub in list(self._subscribers):
            await sub.aclose()
        self._subscribers.clear()
        with contextlib.suppress(Exception):
            await self.client.aclose()


class ShardedCommands:
    """A Redis Cluster's command client as the parts use a plain one: every command
    passes through, but a hint goes out by ``SPUBLISH`` in the slot of its channel
    (where the broker's subscribers listen; a plain ``PUBLISH`` on a cluster reaches
    only plain subscribers, on every node). ``aclose`` is the broker's to call."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._client = broker.client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def publish(self, channel: str, message: bytes | str) -> int:
        return await self._broker.publish(channel, _bytes(message))

    def pipeline(self, transaction: bool = False) -> ShardedPipeline:
        # A cluster pipeline is never one transaction (its keys span slots).
        return ShardedPipeline(self._client.pipeline(), self._broker)

    def pubsub(self, **_: Any) -> BrokerPubSub:
        return BrokerPubSub(self._broker)

    async def aclose(self) -> None:
        """The broker closes its client; the parts' ``aclose`` is a no-op."""


class ShardedPipeline:
    """A cluster pipeline whose ``publish`` is the broker's: the hints go out, in
    order, after the pipeline's other commands (as a plain pipeline sends them
    after the writes before them), and each result stays at its place."""

    def __init__(self, pipe: Any, broker: Broker) -> None:
        self._pipe = pipe
        self._broker = broker
        self._publishes: list[tuple[int, str, bytes]] = []
        self._queued = 0

    def __getattr__(self, name: str) -> Any:
        command = getattr(self._pipe, name)

        def queue(*args: Any, **kwargs: Any) -> ShardedPipeline:
            command(*args, **kwargs)
            self._queued += 1
            return self

        return queue

    def publish(self, channel: str, message: bytes | str) -> ShardedPipeline:
        self._publishes.append((self._queued, channel, _bytes(message)))
        self._queued += 1
        return self

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        publishes, self._publishes = self._publishes, []
        others = self._queued - len(publishes)
        self._queued = 0
        results = list(await self._pipe.execute(raise_on_error=raise_on_error)) if others else []
        for index, channel, message in publishes:  # ascending: each lands at its place
            results.insert(index, await self._broker.publish(channel, message))
        return results

    async def __aenter__(self) -> ShardedPipeline:
        return self

    async def __aexit__(self, *_: object) -> None:
        self._publishes.clear()
        self._queued = 0
        with contextlib.suppress(Exception):
            await self._pipe.reset()


class BrokerPubSub:
    """The part of redis-py's ``PubSub`` the parts' own listeners use (``subscribe``,
    ``get_message``, ``ping``, ``aclose``), kept by a broker ``Subscriber``: on a
    cluster their channels are sharded too, and placed again after a failover by
    the subscriber itself (a ``Lost`` reads as no message: the hints are hints,
    and every listener also polls for what a lost one would have said)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._sub = broker.subscriber()

    async def subscribe(self, *channels: str) -> None:
        self._sub.add(*channels)
        await self._sub.start()

    async def get_message(
        self, ignore_subscribe_messages: bool = False, timeout: float | None = None
    ) -> dict[str, Any] | None:
        item = await self._sub.get(timeout=timeout)
        match item:
            case Message(channel=channel, data=data):
                return {"type": "message", "pattern": None, "channel": channel, "data": data}
            case Subscribed(channel=channel) if not ignore_subscribe_messages:
                return {"type": "subscribe", "pattern": None, "channel": channel, "data": 1}
            case _:
                return None

    async def ping(self) -> None:
        """The subscriber pings its own connections."""

    async def aclose(self) -> None:
        await self._sub.aclose()
        with contextlib.suppress(ValueError):
            self._broker._subscribers.remove(self._sub)


@dataclass(eq=False)
class _Link:
    """One subscriber connection, to one node, and the task reading it."""

    name: str
    client: Any
    pubsub: Any
    reader: asyncio.Task[None] | None = None
    channels: set[str] = field(default_factory=set)
    """Subscribed (asked for) on this connection; confirmed or not yet."""
    ping_sent_at: float | None = None


class Subscriber:
    """A set of channels kept subscribed; read what happens to them with ``get`` or
    ``async for``. ``start`` (on the event loop) before the first ``get``."""

    def __init__(
        self, broker: Broker, on_message: Callable[[str, bytes], None] | None = None
    ) -> None:
        self._broker = broker
        self._on_hint = on_message
        """Called with each hint in the reading task, instead of queueing a ``Message``
        (the live hub: no queue and no task switch per hint on its hot path)."""
        self._subscribe = "ssubscribe" if broker.sharded else "subscribe"
        self._unsubscribe = "sunsubscribe" if broker.sharded else "unsubscribe"
        self.patterns: set[str] = set()
        """The names in ``wanted`` that are patterns (``add_pattern``)."""
        self.wanted: set[str] = set()
        """What the owner asked for."""
        self.live: set[str] = set()
        """Confirmed by the server and not lost since."""
        self._placed: dict[str, _Link] = {}
        self._removing: set[str] = set()
        self._links: dict[str, _Link] = {}
        self._items: asyncio.Queue[Item] = asyncio.Queue()
        self._changed = asyncio.Event()
        self._refresh = broker.sharded
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def healthy(self) -> bool:
        """Every channel asked for is subscribed now."""
        return self.wanted <= self.live

    # ---- what the owner calls ----------------------------------------------

    def add(self, *channels: str) -> None:
        new = set(channels) - self.wanted
        if new:
            self.wanted |= new
            self._changed.set()

    def add_pattern(self, pattern: str) -> None:
        """Subscribe to every channel matching ``pattern`` (``PSUBSCRIBE``): on one
        Redis only, where one pattern costs the server one match per message; sharded
        pub/sub has no patterns. Its items: ``Subscribed(pattern)``, ``Lost(pattern)``,
        and ``Message(channel, data)`` with the channel the hint was sent on."""
        if self._broker.sharded:
            raise ValueError("sharded pub/sub has no pattern subscriptions: add each channel")
        self.patterns.add(pattern)
        self.add(pattern)

    def discard(self, *channels: str) -> None:
        gone = set(channels) & self.wanted
        if gone:
            self.wanted -= gone
            self._changed.set()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="broker-subscriber")

    async def get(self, timeout: float | None = None) -> Item | None:
        """The next item, or None after ``timeout`` seconds without one."""
        if timeout is None:
            return await self._items.get()
        try:
            async with asyncio.timeout(timeout):
                return await self._items.get()
        except TimeoutError:
            return None

    async def __aiter__(self) -> AsyncIterator[Item]:
        while True:
            yield await self._items.get()

    async def aclose(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        for link in list(self._links.values()):
            await self._close_link(link)

    # ---- keeping the subscriptions -----------------------------------------

    async def _run(self) -> None:
        backoff, failures = BACKOFF_FIRST_S, 0
        while not self._closed:
            self._changed.clear()
            try:
                await self._apply()
                backoff, failures = BACKOFF_FIRST_S, 0
            except (RedisError, RedisClusterException, OSError) as error:
                self._refresh = self._broker.sharded
                failures += 1
                # the first failure of a streak is news; the retries of a failover are not
                level = logging.WARNING if failures == 1 else logging.DEBUG
                log.log(level, "broker: subscribing failed (%s); trying again with backoff", error)
                await asyncio.sleep(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            await self._changed.wait()

    async def _apply(self) -> None:
        """Make the connections say what ``wanted`` says."""
        if self._refresh and self.wanted - set(self._placed):
            await self._refresh_topology()
        for channel in sorted(set(self._placed) - self.wanted):
            link = self._placed.pop(channel)
            link.channels.discard(channel)
            self.live.discard(channel)
            self._removing.add(channel)
            await getattr(link.pubsub, self._command(channel, self._unsubscribe))(channel)
        for channel in sorted(self.wanted - set(self._placed)):
            link = await self._link_for(channel)
            self._placed[channel] = link
            link.channels.add(channel)
            try:
                await getattr(link.pubsub, self._command(channel, self._subscribe))(channel)
            except BaseException:
                self._placed.pop(channel, None)
                link.channels.discard(channel)
                if link.reader is None:  # never connected: nothing will read it, drop it
                    self._links.pop(link.name, None)
                    await self._close_link(link)
                raise
            if link.reader is None:
                link.reader = asyncio.create_task(self._read(link), name=f"broker-{link.name}")

    def _command(self, name: str, command: str) -> str:
        return f"p{command}" if name in self.patterns else command

    async def _refresh_topology(self) -> None:
        """Ask the cluster who serves which slot (after a failover or a move)."""
        cluster: RedisCluster = self._broker.client
        # The client's own first initialize (its command parser too) if no command
        # has run on it yet: a topology refreshed under it alone would leave its
        # commands (a publish) failing for good. Then the refresh itself, now.
        await cluster.initialize()
        await cluster.nodes_manager.initialize()
        self._refresh = False

    async def _link_for(self, channel: str) -> _Link:
        if self._broker.sharded:
            node = self._broker.client.get_node_from_key(channel)
            name, host, port = node.name, node.host, node.port
        else:
            name, host, port = "single", "", 0
        link = self._links.get(name)
        if link is not None and not link.channels and self._broker.sharded:
            # idle since its channels left: the node may no longer be a master
            self._links.pop(name)
            await self._close_link(link)
            link = None
        if link is None:
            link = self._open_link(name, host, port)
            if self._broker.sharded:
                await self._require_master(link)
            self._links[name] = link
        return link

    async def _require_master(self, link: _Link) -> None:
        """A node the cluster's view calls a master, right after a failover, may be
        the old master turned replica (that view settles by gossip): ask it. A replica
        would take the subscription too, and count nowhere on the new master."""
        try:
            role = await link.client.execute_command("ROLE")
        except BaseException:
            await self._close_link(link)
            raise
        if _text(role[0]) != "master":
            await self._close_link(link)
            raise RedisConnectionError(f"{link.name} is a {_text(role[0])} now; asking again")

    def _open_link(self, name: str, host: str, port: int) -> _Link:
        # Our own connection, failing loudly (no silent retries): a lost subscription
        # must be seen, so that what it missed is read from the store.
        options: dict[str, Any] = {
            "retry": Retry(NoBackoff(), 0),
            "socket_connect_timeout": CONNECT_TIMEOUT_S,
            "socket_timeout": COMMAND_TIMEOUT_S,
        }
        if self._broker.address is None:
            client = aioredis.Redis.from_url(self._broker.url, **options)
        else:
            address = self._broker.address
            client = aioredis.Redis(
                host=host,
                port=port,
                username=address.username,
                password=address.password,
                ssl=address.tls,
                **options,
            )
        return _Link(name, client, client.pubsub())

    async def _read(self, link: _Link) -> None:
        try:
            while True:
                message = await link.pubsub.get_message(timeout=PING_EVERY_S)
                if message is None:
                    await self._ping(link)
                    continue
                self._on_message(link, message)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # whatever broke the connection: place its channels again
            self._lost(link, f"{type(error).__name__}: {error}")

    async def _ping(self, link: _Link) -> None:
        now = time.monotonic()
        if link.ping_sent_at is not None and now - link.ping_sent_at > PING_EVERY_S:
            raise ConnectionError(f"no answer to a ping in {PING_EVERY_S:.0f} s")
        if link.ping_sent_at is None:
            link.ping_sent_at = now
            await link.pubsub.ping()

    def _on_message(self, link: _Link, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "pong":
            link.ping_sent_at = None
            return
        channel = _text(message["channel"])
        if kind in ("message", "smessage", "pmessage"):
            if self._on_hint is not None:
                try:
                    self._on_hint(channel, _bytes(message["data"]))
                except Exception:  # the owner's bug, not a lost connection: keep reading
                    log.exception("broker: the handler of a hint on %s failed", channel)
            else:
                self._items.put_nowait(Message(channel, _bytes(message["data"])))
            return
        if kind in ("psubscribe", "punsubscribe"):
            # its confirmations name the pattern (redis-py puts it in "channel")
            kind = kind[1:]
        if kind in ("subscribe", "ssubscribe"):
            if self._placed.get(channel) is link and channel not in self.live:
                self.live.add(channel)
                self._items.put_nowait(Subscribed(channel))
        elif kind in ("unsubscribe", "sunsubscribe"):
            if channel in self._removing:
                self._removing.discard(channel)
            elif self._placed.get(channel) is link:
                # Not ours: the server dropped it (its slot now belongs to another master).
                self._forget(channel, link, "the server ended the subscription (slot moved)")
                self._refresh = self._broker.sharded
                self._changed.set()

    def _forget(self, channel: str, link: _Link, reason: str) -> None:
        self._placed.pop(channel, None)
        link.channels.discard(channel)
        if channel in self.live:
            self.live.discard(channel)
        self._items.put_nowait(Lost(channel, reason))

    def _lost(self, link: _Link, reason: str) -> None:
        log.warning("broker: subscriber connection to %s lost (%s)", link.name, reason)
        for channel in sorted(link.channels):
            self._forget(channel, link, reason)
        self._links.pop(link.name, None)
        link.reader = None  # this very task ends now
        asyncio.get_running_loop().create_task(self._close_link(link))
        self._refresh = self._broker.sharded
        self._changed.set()

    async def _close_link(self, link: _Link) -> None:
        if link.reader is not None and link.reader is not asyncio.current_task():
            link.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await link.reader
        with contextlib.suppress(Exception):
            await link.pubsub.aclose()
        with contextlib.suppress(Exception):
            await link.client.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def listen_blocking(
    url: str,
    channels: Iterable[str],
    on_item: Callable[[Item], None],
    *,
    stop: threading.Event,
    poll_s: float = 0.5,
) -> None:
    """Subscribe to ``channels`` and call ``on_item`` for each item until ``stop`` is
    set: for a thread of a synchronous process (a worker's hint listener). Runs an
    event loop of its own in the calling thread."""

    async def listen() -> None:
        broker = Broker(url)
        sub = broker.subscriber()
        sub.add(*channels)
        await sub.start()
        try:
            while not stop.is_set():
                item = await sub.get(timeout=poll_s)
                if item is not None:
                    on_item(item)
        finally:
            await broker.aclose()

    asyncio.run(listen())
