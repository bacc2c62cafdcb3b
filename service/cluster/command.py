"""``matcha cluster up`` / ``matcha cluster stop`` (``make cluster``, ``make cluster-stop``)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import time
from pathlib import Path

import click

from service.cluster import shape as shapes
from service.run import admin_token
from service.store.db import with_database
from service.supervisor import Supervisor, lock_folder

COMMAND = "matcha cluster"
DEFAULT_DATA_DIR = Path("var") / "cluster"
STOP_WAIT_S = 30.0


def _banner(shape: shapes.Shape, data_dir: Path, token: str) -> None:
    cluster, pair = shape.redis, shape.postgres
    layout = cluster.layout()
    masters = sorted(p for p, m in layout.items() if m is None)
    replicas = ", ".join(f"{p} of {m}" for p, m in sorted(layout.items()) if m is not None)
    pids = ", ".join(str(n.server.pid) for n in cluster.nodes if n.server is not None)
    click.echo(f"Redis Cluster: {cluster.url}")
    click.echo(f"               masters {', '.join(map(str, masters))}; replicas {replicas}")
    click.echo(f"               (pids {pids}); the services use {shape.services_redis_url}")
    for role, server in (("primary", pair.primary), ("standby", pair.standby)):
        url = with_database(server.url, "matcha", user="matcha_app")
        pid = server.server.pid if server.server is not None else "?"
        click.echo(f"PostgreSQL:    {role} {url} (pid {pid})")
    click.echo("               streaming through the slot matcha_standby; the services write")
    click.echo(f"               through {shape.database_url}")
    click.echo("Migrations:    applied")
    for n, url in enumerate(shape.api_urls, start=1):
        click.echo(f"API {n}:         {url}/ (log {data_dir / 'logs' / f'api-{n}.log'})")
    click.echo(f"Workers:       matcha worker x 2 (logs {data_dir / 'logs'}/worker-N.log)")
    click.echo(f"Proxy:         {shape.proxy_url}/ (nginx, sticky by match id)")
    click.echo(f"Admin token:   {token}")
    click.echo(f"Data:          {data_dir}")
    click.echo(
        f"The Matcha cluster is running at {shape.proxy_url}/ — press Ctrl-C"
        " (or run `make cluster-stop`) to stop it."
    )


@click.group("cluster")
def cluster() -> None:
    """The clustered shape on this machine: Redis Cluster, PostgreSQL primary + standby,
    two APIs behind nginx, two workers."""


_data_dir = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
    help="Where the servers keep their data and the processes their logs.",
)


@cluster.command("up")
@_data_dir
@click.option("--port", type=int, default=None, help="The proxy's port [8080, else a free one].")
@click.option(
    "--services-redis",
    type=click.Choice(["node", "cluster"]),
    default="cluster",
    show_default=True,
    help="REDIS_URL of the APIs and workers: the master of RQ's slot (node), or the"
    " redis+cluster:// URL (cluster).",
)
@click.option("--fresh", is_flag=True, help="Remove the data folder first: a new cluster.")
def up(data_dir: Path, port: int | None, services_redis: str, fresh: bool) -> None:
    """Start everything in the foreground; Ctrl-C stops it all."""
    missing = shapes.binaries_missing()
    if missing:
        raise click.ClickException(missing)
    data_dir = data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(data_dir, COMMAND)
    try:
        if fresh:
            for child in data_dir.iterdir():
                if child.name != f"{COMMAND.replace(' ', '-')}.lock":
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        ports = shapes.Ports.remembered(data_dir, port)
        token = admin_token(data_dir)
        supervisor = Supervisor(COMMAND)

        def start() -> None:
            shape = shapes.start_shape(
                supervisor,
                data_dir,
                ports,
                token=token,
                services_redis=services_redis,
                say=supervisor.say,
            )
            _banner(shape, data_dir, token)

        supervisor.serve(start)
    finally:
        lock.close()


@cluster.command("stop")
@_data_dir
def stop(data_dir: Path) -> None:
    """Stop the cluster `matcha cluster up` runs on this data folder (from another terminal)."""
    path = data_dir.expanduser().resolve() / f"{COMMAND.replace(' ', '-')}.lock"
    if not path.exists():
        click.echo(f"no cluster runs on {data_dir}")
        return
    with path.open("a+") as lock:
        if _free(lock):
            click.echo(f"no cluster runs on {data_dir}")
            return
        lock.seek(0)
        pid = int(lock.read().strip() or 0)
        if pid <= 0:
            raise click.ClickException(f"{path} names no process")
        click.echo(f"stopping the cluster (pid {pid}) ...")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < deadline:
            if _free(lock):
                click.echo("the cluster stopped")
                return
            time.sleep(0.2)
    raise click.ClickException(f"the cluster (pid {pid}) did not stop within {STOP_WAIT_S:.0f}s")


def _free(lock: object) -> bool:
    """Whether nobody holds the lock (taking it for a moment to know)."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # type: ignore[arg-type]
    except BlockingIOError:
        return False
    fcntl.flock(lock, fcntl.LOCK_UN)  # type: ignore[arg-type]
    return True
