"""The clustered shape on one machine, started piece by piece under a supervisor.

``start_shape`` is what ``matcha cluster up`` runs, and what a test fixture
runs to get the same shape (``tests/cluster``): the Redis Cluster, the
PostgreSQL primary and standby, the migrations, two API processes and two
workers (children of the supervisor, restarted if they exit), and nginx in
front, in that order; the supervisor stops them in the reverse one.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from service.cluster import postgres_pair, proxy, redis_nodes
from service.processes import ServerFailed, free_port, server_could_listen
from service.run import app_database
from service.store.db import with_database
from service.store.migrate import apply_migrations
from service.supervisor import Supervisor, wait_for_http

RQ_KEY_PREFIX = "{rq}"
"""Every RQ key in one hash slot (workers/rq_cluster.py says why)."""

_DEFAULT_PORTS = {
    "redis": [7001, 7002, 7003, 7004, 7005, 7006],
    "primary": 5433,
    "standby": 5434,
    "apis": [8001, 8002],
    "proxy": 8080,
}


@dataclass
class Ports:
    redis: list[int]
    primary: int
    standby: int
    apis: list[int]
    proxy: int

    @classmethod
    def free(cls, apis: int = 2) -> Ports:
        """Ports nobody listens on now (a test's)."""
        return cls(
            redis=redis_nodes.free_node_ports(),
            primary=free_port(),
            standby=free_port(),
            apis=[free_port() for _ in range(apis)],
            proxy=free_port(),
        )

    @classmethod
    def remembered(cls, data_dir: Path, proxy_port: int | None = None) -> Ports:
        """The ports of the last run on ``data_dir`` (``ports.json``), else the usual
        ones, each replaced by a free one when taken; the Redis nodes keep theirs
        (their ``nodes.conf`` names them): a taken one is an error."""
        path = data_dir / "ports.json"
        known = json.loads(path.read_text()) if path.exists() else {}
        chosen: dict[str, object] = {}
        for name, default in _DEFAULT_PORTS.items():
            wanted = known.get(name, default)
            if name == "proxy" and proxy_port is not None:
                wanted = proxy_port
            if isinstance(wanted, list):
                chosen[name] = [_this_or_free(p, name, known) for p in wanted]
            else:
                chosen[name] = _this_or_free(int(wanted), name, known)
        ports = cls(**chosen)  # type: ignore[arg-type]
        path.write_text(json.dumps(asdict(ports), indent=2) + "\n")
        return ports


def _this_or_free(port: int, name: str, known: dict[str, object]) -> int:
    bus = port + redis_nodes.BUS_PORT_OFFSET if name == "redis" else port
    if server_could_listen(port) and server_could_listen(bus):
        return port
    if name != "redis":
        return free_port()
    if "redis" in known:
        raise ServerFailed(
            f"port {port} of a Redis node is taken by another process; stop it, or "
            "remove the data folder's redis/ to make a new cluster"
        )
    return redis_nodes.free_node_ports(1)[0]


@dataclass
class Shape:
    """Where everything listens (what the banner prints)."""

    redis: redis_nodes.RedisCluster
    postgres: postgres_pair.PostgresPair
    migrate_url: str
    database_url: str
    standby_database_url: str
    services_redis_url: str
    api_urls: list[str] = field(default_factory=list)
    proxy_url: str = ""


def _database_urls(pair: postgres_pair.PostgresPair) -> tuple[str, str, str]:
    """(owner URL to migrate, the app's URL of whichever server takes writes, the
    app's URL on the standby)."""
    migrate_url, _ = app_database(pair.primary.url)
    writer = pair.writer_url("matcha", user="matcha_app")
    standby = with_database(pair.standby.url, "matcha", user="matcha_app")
    return migrate_url, writer, standby


def services_env(shape: Shape, data_dir: Path, token: str) -> dict[str, str]:
    metrics = data_dir / "run" / "metrics"
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True)
    return {
        **os.environ,
        "DATABASE_URL": shape.database_url,
        "MATCHA_STANDBY_DATABASE_URL": shape.standby_database_url,
        "REDIS_URL": shape.services_redis_url,
        "RQ_KEY_PREFIX": RQ_KEY_PREFIX,
        "MATCHA_ADMIN_TOKEN": token,
        "MATCHA_DATA_DIR": str(data_dir),
        "MATCHA_MIGRATE_ON_START": "0",  # done once, before they start
        "PROMETHEUS_MULTIPROC_DIR": str(metrics),
        "PYTHONUNBUFFERED": "1",
    }


def start_shape(
    supervisor: Supervisor,
    data_dir: Path,
    ports: Ports,
    *,
    token: str,
    workers: int = 2,
    services_redis: str = "cluster",
    say: Callable[[str], None] = print,
) -> Shape:
    """Start everything (servers into ``supervisor.servers``, the APIs and workers as
    its children) and wait until each answers. ``services_redis``: what the APIs and
    workers are given as REDIS_URL: ``cluster`` (the ``redis+cluster://`` URL: sharded
    hints through ``service/broker/pubsub.py``, RQ on its slot's master) or ``node``
    (the master of RQ's slot as a plain Redis: plain pub/sub, which a cluster copies to
    every node)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    say(f"starting {redis_nodes.NODES} Redis nodes (data in {data_dir / 'redis'}) ...")
    cluster = redis_nodes.start_redis_cluster(data_dir / "redis", ports.redis)
    supervisor.servers.append(("the Redis Cluster", cluster))
    say(f"starting PostgreSQL, primary and standby (data in {data_dir / 'postgres'}) ...")
    pair = postgres_pair.start_postgres_pair(data_dir / "postgres", ports.primary, ports.standby)
    supervisor.servers.append(("PostgreSQL (standby, then primary)", pair))

    migrate_url, app_url, standby_url = _database_urls(pair)
    apply_migrations(migrate_url)
    pair.wait_replayed()
    if services_redis == "cluster":
        services_redis_url = cluster.url
    else:
        services_redis_url = f"redis://127.0.0.1:{cluster.master_of(RQ_KEY_PREFIX)}/0"
    shape = Shape(cluster, pair, migrate_url, app_url, standby_url, services_redis_url)

    env = services_env(shape, data_dir, token)
    logs = data_dir / "logs"
    logs.mkdir(exist_ok=True)
    apis = []
    for n, port in enumerate(ports.apis, start=1):
        api_env = {**env, "MATCHA_CHECKPOINT_DIR": str(data_dir / f"api-{n}" / "checkpoints")}
        argv = [sys.executable, "-m", "service.cli", "api", "--host", "127.0.0.1"]
        apis.append(
            supervisor.spawn(
                f"API {n}", [*argv, "--port", str(port)], api_env, log=logs / f"api-{n}.log"
            )
        )
    for n in range(1, workers + 1):
        supervisor.spawn(
            f"worker {n}",
            [sys.executable, "-m", "service.cli", "worker"],
            env,
            log=logs / f"worker-{n}.log",
        )
    for child, port in zip(apis, ports.apis, strict=True):
        wait_for_http(f"http://127.0.0.1:{port}/healthz", child, timeout=90)
        shape.api_urls.append(f"http://127.0.0.1:{port}")
    nginx = proxy.start_proxy(data_dir / "nginx", ports.proxy, ports.apis)
    supervisor.servers.append(("nginx", nginx))
    shape.proxy_url = nginx.url
    return shape


def binaries_missing() -> str | None:
    """Why the clustered shape cannot start on this machine, or None."""
    return (
        redis_nodes.binaries_missing() or postgres_pair.binaries_missing() or proxy.binary_missing()
    )
