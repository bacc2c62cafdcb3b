"""Six real Redis nodes in cluster mode on this machine: 3 masters, 3 replicas.

Debian's ``redis-server`` (7.0) with ``--cluster-enabled yes``, one folder per
node under ``<dir>/<port>/`` (its ``nodes.conf`` and append-only file), on
127.0.0.1. The first start makes the cluster (``redis-cli --cluster create
... --cluster-replicas 1``); a later start on the same folders finds it again,
since every node keeps the cluster's layout in its ``nodes.conf``, which is
also why a node keeps its port from one run to the next.

``node_timeout_ms`` is how long a master may be silent before its replica
takes over: the failover time is about twice that. 2 s here (Redis's default
is 15 s, tuned for networks that hiccup; a machine's loopback does not).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from service.processes import (
    ServerFailed,
    ServerProcess,
    run_checked,
    server_could_listen,
    spawn,
    tail,
    wait_until,
)

REDIS_SERVER = "/usr/bin/redis-server"
REDIS_CLI = "/usr/bin/redis-cli"
NODES = 6
REPLICAS_PER_MASTER = 1
NODE_TIMEOUT_MS = 2000
SLOTS = 16384


BUS_PORT_OFFSET = 10000
"""Each node also listens on its port + 10000, for the other nodes (the cluster bus)."""


def free_node_ports(count: int = NODES) -> list[int]:
    """Ports for nodes where both the port and its bus port are free (so under 55536)."""
    import random

    chosen: list[int] = []
    while len(chosen) < count:
        port = random.randrange(20000, 45000)
        taken = {p for c in chosen for p in (c, c + BUS_PORT_OFFSET)}
        if {port, port + BUS_PORT_OFFSET} & taken:
            continue
        if server_could_listen(port) and server_could_listen(port + BUS_PORT_OFFSET):
            chosen.append(port)
    return chosen


def binaries_missing() -> str | None:
    """Why the Redis cluster cannot start here, or None."""
    for binary in (REDIS_SERVER, REDIS_CLI):
        if not Path(binary).exists():
            return f"{binary} is missing (apt-get install redis-server)"
    return None


@dataclass
class RedisNode:
    port: int
    folder: Path
    server: ServerProcess | None = None

    @property
    def alive(self) -> bool:
        return self.server is not None and self.server.proc.poll() is None

    def client(self, timeout: float = 2.0) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout
        )

    def ask(self, *command: str) -> Any:
        """One command to this node (CLUSTER ...), its answer as redis-py parses it."""
        client = self.client()
        try:
            return client.execute_command(*command)  # type: ignore[no-untyped-call]
        finally:
            client.close()

    def ask_text(self, *command: str) -> str:
        answer = self.ask(*command)
        return answer.decode() if isinstance(answer, bytes) else str(answer)


@dataclass
class RedisCluster:
    """The running nodes; ``url`` is what the service is given (``service.broker``)."""

    nodes: list[RedisNode]
    node_timeout_ms: int = NODE_TIMEOUT_MS
    _started: list[RedisNode] = field(default_factory=list)

    @property
    def ports(self) -> list[int]:
        return [n.port for n in self.nodes]

    @property
    def url(self) -> str:
        """``redis+cluster://`` with every node as a seed: a client that starts while
        one is down asks the next (docs/scaling.md "Redis Cluster")."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def node(self, port: int) -> RedisNode:
        return next(n for n in self.nodes if n.port == port)

    def layout(self) -> dict[int, int | None]:
        """port -> the port of its master (None for a master), as a live node sees it."""
        for node in self.nodes:
            if not node.alive:
                continue
            try:
                text = node.ask_text("CLUSTER", "NODES")
            except redis.RedisError:
                continue
            return _parse_layout(text)
        raise ServerFailed("no Redis node answers")

    def masters(self) -> list[int]:
        return sorted(p for p, master in self.layout().items() if master is None)

    def master_of(self, key: str) -> int:
        """The port of the master that serves `key`'s hash slot now."""
        for node in self.nodes:
            if not node.alive:
                continue
            try:
                slot = int(node.ask("CLUSTER", "KEYSLOT", key))
                for start, end, master, *_ in node.ask("CLUSTER", "SLOTS"):
                    if int(start) <= slot <= int(end):
                        return int(master[1])
            except redis.RedisError:
                continue
        raise ServerFailed(f"no live Redis node knows who serves {key!r}")

    def kill(self, port: int) -> None:
        """SIGKILL one node, as a crash would: no goodbye to the others."""
        node = self.node(port)
        if node.server is not None:
            node.server.proc.kill()
            node.server.proc.wait()

    def restart(self, port: int, timeout: float = 30) -> None:
        """Start a killed node again on its folder: it rejoins (a replica, if its
        replica took over meanwhile)."""
        _start_node(self.node(port), self.node_timeout_ms, timeout)

    def wait_healthy(self, timeout: float = 60) -> None:
        """Until every live node says the cluster is ok, every master serving slots
        has a replica attached, and every live replica's link to its master is up."""
        deadline = time.monotonic() + timeout
        why: str | None = "not checked yet"
        while time.monotonic() < deadline:
            why = self._unhealthy()
            if why is None:
                return
            time.sleep(0.1)
        raise ServerFailed(f"the Redis cluster was not healthy within {timeout:.0f}s: {why}")

    def _unhealthy(self) -> str | None:
        try:
            for node in self.nodes:
                if not node.alive:
                    continue
                if "cluster_state:ok" not in node.ask_text("CLUSTER", "INFO"):
                    return f"node {node.port}: cluster_state is not ok"
            layout = self.layout()
            masters = [p for p, m in layout.items() if m is None]
            if len(masters) != NODES // (1 + REPLICAS_PER_MASTER):
                return f"{len(masters)} masters: {sorted(masters)}"
            for master in masters:
                replicas = [p for p, m in layout.items() if m == master and self.node(p).alive]
                if not replicas:
                    return f"master {master} has no live replica"
                for replica in replicas:
                    link = self.node(replica).client().info("replication")
                    if link.get("master_link_status") != "up":
                        return f"replica {replica}: link to {master} is down"
        except (redis.RedisError, ServerFailed, StopIteration) as error:
            return str(error)
        return None

    def stop(self, timeout: float = 10) -> None:
        for node in reversed(self.nodes):
            if node.server is not None:
                node.server.stop(timeout)


def _parse_layout(cluster_nodes: str) -> dict[int, int | None]:
    """``CLUSTER NODES`` lines -> port -> its master's port (None: a master).

    A line: ``<id> <ip:port@bus> <flags> <master id or -> <ping> <pong> <epoch> <link> <slots>``.
    Nodes flagged as failed are left out: they serve nothing.
    """
    by_id: dict[str, tuple[int, str, str]] = {}
    for line in cluster_nodes.strip().splitlines():
        parts = line.split()
        node_id, address, flags, master_id = parts[0], parts[1], parts[2], parts[3]
        port = int(address.split("@")[0].rsplit(":", 1)[1])
        if "fail" in flags.split(",") or "noaddr" in flags:
            continue
        by_id[node_id] = (port, "master" if "master" in flags else "replica", master_id)
    out: dict[int, int | None] = {}
    for port, role, master_id in by_id.values():
        out[port] = None if role == "master" else by_id.get(master_id, (None,))[0]
    return out


def _start_node(node: RedisNode, node_timeout_ms: int, timeout: float) -> None:
    node.folder.mkdir(parents=True, exist_ok=True)
    log = node.folder / "redis.log"
    # fmt: off
    argv = [
        REDIS_SERVER,
        "--port", str(node.port), "--bind", "127.0.0.1",
        "--dir", str(node.folder), "--daemonize", "no", "--logfile", str(log),
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", str(node_timeout_ms),
        # queued jobs survive a restart, as in deploy/ (pub/sub hints need not)
        "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
    ]
    # fmt: on
    proc = spawn(argv, stop_signal=signal.SIGTERM)
    node.server = ServerProcess(node.folder, proc, f"redis://127.0.0.1:{node.port}/0", log)

    def answers() -> bool:
        try:
            return bool(node.client(1.0).ping())
        except redis.RedisError:
            return False

    wait_until(answers, proc, f"Redis node {node.port}", log, timeout)


def _known_nodes(node: RedisNode) -> int:
    for line in node.ask_text("CLUSTER", "INFO").splitlines():
        if line.startswith("cluster_known_nodes:"):
            return int(line.split(":")[1])
    return 0


def _create(cluster: RedisCluster, timeout: float) -> None:
    run_checked(
        [
            REDIS_CLI,
            "--cluster",
            "create",
            *[f"127.0.0.1:{p}" for p in cluster.ports],
            "--cluster-replicas",
            str(REPLICAS_PER_MASTER),
            "--cluster-yes",
        ],
        "redis-cli --cluster create",
        timeout=timeout,
    )


def start_redis_cluster(
    folder: Path,
    ports: list[int],
    *,
    node_timeout_ms: int = NODE_TIMEOUT_MS,
    timeout: float = 60,
) -> RedisCluster:
    """Start the nodes on ``ports`` (data in ``folder/<port>``), make the cluster when
    they are new, and wait until it is healthy. On failure nothing is left running."""
    if len(ports) != NODES:
        raise ValueError(f"a cluster of {NODES} nodes needs {NODES} ports, not {len(ports)}")
    missing = binaries_missing()
    if missing:
        raise ServerFailed(missing)
    cluster = RedisCluster([RedisNode(p, folder / str(p)) for p in ports], node_timeout_ms)
    try:
        for node in cluster.nodes:
            _start_node(node, node_timeout_ms, timeout)
        known = [_known_nodes(n) for n in cluster.nodes]
        if all(k == 1 for k in known):
            _create(cluster, timeout)
        elif not all(k == NODES for k in known):
            raise ServerFailed(
                f"the Redis nodes in {folder} know {known} nodes each: a cluster half made "
                f"(an interrupted first start?). Remove {folder} and start again."
            )
        cluster.wait_healthy(timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextlib.contextmanager
def redis_cluster(
    folder: Path, ports: list[int], *, node_timeout_ms: int = NODE_TIMEOUT_MS
) -> Iterator[RedisCluster]:
    """``start_redis_cluster`` for a test: stopped (and its folder kept) on the way out."""
    cluster = start_redis_cluster(folder, ports, node_timeout_ms=node_timeout_ms)
    try:
        yield cluster
    finally:
        cluster.stop()


def log_tails(cluster: RedisCluster) -> str:
    """The end of every node's log, for a failure message."""
    return "\n".join(f"--- {n.port}\n{tail(n.folder / 'redis.log', 8)}" for n in cluster.nodes)
