"""RQ on a Redis Cluster: every RQ key in one hash slot, on whichever master serves it.

RQ is built on commands that span keys: a worker's ``BLPOP``/``LMOVE`` across
its queues, ``MULTI``/``EXEC`` blocks that move a job between its hash, its
queue and its registries (``WATCH`` on its dependencies), and Lua scripts
(a unique enqueue, scheduling, the scheduler's lock) that name several keys. A
Redis Cluster runs a command on several keys only when they share one hash
slot (else ``CROSSSLOT``), and only on the master of that slot. So RQ on a
cluster takes two things, and this module gives the second:

1. **Every key in one slot.** RQ 2.4+ names all its keys under
   ``RQ_KEY_PREFIX``, read from the environment when ``rq`` is first
   imported (default ``rq``: ``rq:queue:<name>``, ``rq:job:<id>``,
   ``rq:wip:<queue>``, ``rq:scheduled:<queue>``, ``rq:workers``, ...). Set it
   to a hash tag, ``RQ_KEY_PREFIX={rq}``, in the environment of every
   process that uses RQ (the APIs enqueue, the workers work): every key is
   then ``{rq}:...`` and Redis hashes only what is inside the braces, so they
   all land in one slot (``CLUSTER KEYSLOT {rq}``: 141). Our own keys next to
   RQ's (a ladder's pending update) go there too: ``slot_key(name)``.
2. **A connection to that slot's master**, found again after a failover:
   ``connection(url)`` gives RQ a plain ``redis.Redis`` (its pipelines,
   scripts and blocking pops work as on one Redis, and its scheduler rebuilds
   the connection in its own process from the pool's class and arguments),
   whose connections ask the cluster, when they connect, which master serves
   the slot (``CLUSTER SLOTS`` from the first seed node that answers), and
   treat an answer of ``MOVED`` or ``READONLY`` (the slot left that node: a
   failover, the old master back as a replica) as a lost connection: redis-py
   then connects again, to the new master.

The cost: RQ's whole load sits on one master of the cluster. Its queues carry
what operators ask for (a recompute, an archive now), not per-move work (the
projection runners follow the log, woken by hints), so one shard is plenty;
a deployment whose queues outgrow it gives them a Redis of their own.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.connection import Connection, ConnectionPool, SSLConnection
from redis.crc import key_slot
from redis.exceptions import ConnectionError, MovedError, ReadOnlyError, RedisError

from service.broker.pubsub import ClusterAddress, is_cluster_url, parse_cluster_url

HASH_TAGGED_PREFIX = "{rq}"
"""What ``RQ_KEY_PREFIX`` is set to for a cluster (docs/scaling.md)."""


class NotOneSlot(RuntimeError):
    """RQ was imported without a hash-tagged key prefix."""


def hash_tag(prefix: str) -> str | None:
    """What Redis hashes of a key starting with ``prefix``: the text in its first
    ``{...}`` when that is not empty (the cluster spec's hash tags), else None."""
    start = prefix.find("{")
    end = prefix.find("}", start + 1)
    if start < 0 or end < 0 or end == start + 1:
        return None
    return prefix[start + 1 : end]


def rq_key_prefix() -> str:
    """RQ's key prefix in this process, as RQ read it when it was imported."""
    from rq.defaults import RQ_KEY_PREFIX

    return str(RQ_KEY_PREFIX)


def require_one_slot() -> str:
    """RQ's key prefix, when it puts every RQ key in one slot; else a clear error."""
    prefix = rq_key_prefix()
    if hash_tag(prefix) is None:
        raise NotOneSlot(
            "RQ on a Redis Cluster needs every RQ key in one hash slot: set "
            f"RQ_KEY_PREFIX={HASH_TAGGED_PREFIX} in the environment of every process that "
            f"uses RQ (it is read when rq is imported; here it is {prefix!r})"
        )
    return prefix


def slot_key(name: str) -> str:
    """One of our own keys that the RQ connection reads or writes, in RQ's slot."""
    return f"{require_one_slot()}:{name}"


class SlotMasterConnection(Connection):
    """A connection to the master that serves one hash slot now (redis-py's own
    Sentinel connection does the same for a Sentinel-managed master).

    ``cluster_nodes``: the seeds, ``host:port,host:port``; ``slot_key``: a key of
    the slot. Both are plain strings, so RQ can rebuild the connection elsewhere.
    """

    tls = False

    def __init__(self, *, cluster_nodes: str, slot_key: str, **kwargs: Any) -> None:
        self.cluster_nodes = cluster_nodes
        self.slot_key = slot_key
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]

    def _connect(self) -> Any:
        self._host, self.port = self._master_address()
        return super()._connect()  # type: ignore[no-untyped-call]

    def _master_address(self) -> tuple[str, int]:
        slot = key_slot(self.slot_key.encode())
        errors = []
        for seed in self.cluster_nodes.split(","):
            host, _, port = seed.rpartition(":")
            ask = redis.Redis(
                host=host,
                port=int(port),
                username=self.username,
                password=self.password,
                ssl=self.tls,
                socket_connect_timeout=self.socket_connect_timeout or 2.0,
                socket_timeout=self.socket_connect_timeout or 2.0,
            )
            try:
                slots = ask.execute_command("CLUSTER", "SLOTS")  # type: ignore[no-untyped-call]
                for start, end, master, *_ in slots:
                    if int(start) <= slot <= int(end):
                        name = master[0].decode() if isinstance(master[0], bytes) else master[0]
                        return name or host, int(master[1])
                errors.append(f"{seed}: slot {slot} is not served")
            except RedisError as error:
                errors.append(f"{seed}: {error}")
            finally:
                ask.close()
        raise ConnectionError(f"no seed node says who serves slot {slot}: {'; '.join(errors)}")

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except (MovedError, ReadOnlyError) as error:
            # The slot is served elsewhere now: connect again, to its master.
            self.disconnect()  # type: ignore[no-untyped-call]
            raise ConnectionError(f"the slot of {self.slot_key} moved ({error})") from error


class SlotMasterSSLConnection(SlotMasterConnection, SSLConnection):
    """The same over TLS (``rediss+cluster://``)."""

    tls = True


def connection(url: str, **options: Any) -> redis.Redis:
    """The synchronous client RQ is given: ``Redis.from_url`` for one Redis, the
    master of RQ's slot for a ``redis+cluster://`` URL (``service.broker``)."""
    if not is_cluster_url(url):
        return redis.Redis.from_url(url, **options)
    address: ClusterAddress = parse_cluster_url(url)
    prefix = require_one_slot()
    pool = ConnectionPool(
        connection_class=SlotMasterSSLConnection if address.tls else SlotMasterConnection,
        cluster_nodes=",".join(f"{host}:{port}" for host, port in address.nodes),
        slot_key=prefix,
        username=address.username,
        password=address.password,
        **options,
    )
    return redis.Redis(connection_pool=pool)
