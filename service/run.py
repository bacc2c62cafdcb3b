"""`matcha run`: the whole service on one machine, in one command.

Starts (or reuses, when DATABASE_URL / REDIS_URL are set) PostgreSQL and
Redis, applies the migrations, then runs the API (uvicorn) and one worker
as child processes, and prints where to find them. A child that exits is
started again, with backoff (1 s, doubling to 30 s; back to 1 s once it has
run for a minute), and nothing else is touched: the API never goes down
because the worker did. Ctrl-C or SIGTERM stops everything it started within
``STOP_DEADLINE_S``, in reverse order: the worker and the API first (they use
the servers; each stops itself within its own 10 s, and is killed if not),
then Redis, then PostgreSQL.

Every child runs in its own process group, so a Ctrl-C typed in the terminal
reaches only this process, which then decides the order; each child is also
told by the kernel to stop if this process dies without cleaning up.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import click

from service.api.http_protocol import PROTOCOL as HTTP_PROTOCOL
from service.api.http_protocol import WS_MAX_MESSAGE_BYTES
from service.cli import COMMANDS
from service.embedded import die_with_parent, start_postgres, start_redis
from service.errors import MatchaError
from service.ops.logging import uvicorn_log_config
from service.ops.stopping import DRAIN_S
from service.settings import load_settings
from service.store.db import with_database
from service.store.migrate import apply_migrations


class _Stop(Exception):
    """Raised from the signal handler: unwinds whatever is starting, then we clean up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signum)


STOP_DEADLINE_S = 12.0
"""Ctrl-C to everything stopped, at most: the children's share, then the servers'."""
CHILDREN_STOP_S = 8.0
"""The API and the worker each end within 10 s of SIGTERM by themselves (normally in
one or two); past this share of the deadline the stragglers are killed."""
RESTART_FIRST_S = 1.0
RESTART_MAX_S = 30.0
HEALTHY_AFTER_S = 60.0
"""A child that ran this long before exiting is restarted at once, not after a backoff."""


@dataclass
class _Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    stop_signal: int = signal.SIGTERM
    started_at: float = field(default_factory=time.monotonic)
    restarts: int = 0
    backoff_s: float = 0.0
    restart_at: float | None = None
    """Set while the child is down and waiting for its restart."""


@dataclass
class _Supervisor:
    """What `matcha run` started, stopped last-started-first."""

    children: list[_Child] = field(default_factory=list)
    servers: list[tuple[str, Any]] = field(default_factory=list)

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> _Child:
        child = _Child(name, argv, env, _popen(argv, env))
        self.children.append(child)
        return child

    def exited(self) -> _Child | None:
        return next(
            (c for c in self.children if c.restart_at is None and c.proc.poll() is not None), None
        )

    def tend(self) -> None:
        """Schedule the restart of a child that exited; start those whose time came.

        Backoff like a container runtime's: 1 s, doubling up to 30 s, while the
        child keeps failing; a child that ran for a minute first is restarted at once.
        """
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is None and child.proc.poll() is not None:
                ran = now - child.started_at
                if ran >= HEALTHY_AFTER_S:
                    child.backoff_s = 0.0
                else:
                    child.backoff_s = min(RESTART_MAX_S, max(RESTART_FIRST_S, child.backoff_s * 2))
                child.restart_at = now + child.backoff_s
                click.echo(
                    f"matcha run: the {child.name} exited with code {child.proc.returncode}"
                    f" after {ran:.1f} s; starting it again in {child.backoff_s:.0f} s",
                    err=True,
                )
            elif child.restart_at is not None and now >= child.restart_at:
                child.proc = _popen(child.argv, child.env)
                child.started_at, child.restart_at = now, None
                child.restarts += 1
                click.echo(
                    f"matcha run: {child.name} started again (pid {child.proc.pid},"
                    f" restart {child.restarts})",
                    err=True,
                )

    def stop_all(self) -> None:
        deadline = time.monotonic() + STOP_DEADLINE_S
        children_until = time.monotonic() + CHILDREN_STOP_S
        # Children first: each gets its graceful signal at once, then they are awaited together.
        for child in reversed(self.children):
            if child.proc.poll() is None:
                click.echo(f"matcha run: stopping {child.name} (pid {child.proc.pid})", err=True)
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(child.stop_signal)
        for child in reversed(self.children):
            try:
                child.proc.wait(max(0.0, children_until - time.monotonic()))
            except subprocess.TimeoutExpired:
                click.echo(f"matcha run: {child.name} did not stop in time; killing it", err=True)
            # Its whole group: a job process it forked must not outlive it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, signal.SIGKILL)
            child.proc.wait()
        self.children.clear()
        for name, handle in reversed(self.servers):
            click.echo(f"matcha run: stopping {name}", err=True)
            _stop_server(handle, max(1.0, deadline - time.monotonic()))
        self.servers.clear()


def _popen(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        process_group=0,
        preexec_fn=die_with_parent(signal.SIGTERM),
    )


def _stop_server(handle: Any, timeout: float) -> None:
    """An embedded server's clean stop (its own signal), killed if it takes too long."""
    proc: subprocess.Popen[bytes] = handle.proc
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(handle.stop_signal)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _lock_data_dir(data_dir: Path) -> Any:
    """One `matcha run` per data folder: a second one would fight over its servers."""
    import fcntl

    lock = (data_dir / "matcha-run.lock").open("a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "another process"
        lock.close()
        raise click.ClickException(
            f"{data_dir} is in use by another `matcha run` (pid {holder}); stop it, "
            "or give this one its own folder with --data-dir"
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


def admin_token(data_dir: Path) -> str:
    """MATCHA_ADMIN_TOKEN, or one generated on the first run and kept in `<data>/admin-token`."""
    from_env = os.environ.get("MATCHA_ADMIN_TOKEN", "")
    if from_env:
        return from_env
    path = data_dir / "admin-token"
    if path.exists():
        kept = path.read_text().strip()
        if kept:
            return kept
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return token


def _apply_migrations(url: str) -> bool:
    apply_migrations(url)
    return True


def _embedded_database(server_url: str) -> tuple[str, str]:
    """Database `matcha` on the embedded server: (superuser URL to migrate, app URL).

    The service itself logs in as `matcha_app` (created by the first migration),
    which may read and append events but never change or delete them, exactly
    as in production; trust authentication on the private socket needs no password.
    """
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = 'matcha'").fetchone() is None:
            conn.execute("CREATE DATABASE matcha")
    app_url = with_database(server_url, "matcha", user="matcha_app")
    return with_database(server_url, "matcha"), app_url


def _wait_for_http(url: str, child: _Child, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.proc.poll() is not None:
            raise click.ClickException(f"the {child.name} exited with code {child.proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except urllib.error.HTTPError:
            pass  # it answers (not ready yet, or no such route): keep waiting for 200
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise click.ClickException(f"the {child.name} did not answer {url} within {timeout:.0f}s")


def _redact_url(url: str) -> str:
    """A URL without its password, for printing."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


@click.command()
@click.option("--host", default=None, help="Interface the API listens on [MATCHA_HOST, 127.0.0.1].")
@click.option("--port", type=int, default=None, help="API port [MATCHA_PORT, 8000].")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the embedded servers keep their data [MATCHA_DATA_DIR, var].",
)
@click.option("--worker/--no-worker", default=True, help="Also run one RQ worker.")
def run(host: str | None, port: int | None, data_dir: Path | None, worker: bool) -> None:
    """Run PostgreSQL, Redis, the API and a worker; Ctrl-C stops them all."""
    settings = load_settings()
    host = host or settings.api.host
    port = port or settings.api.port
    data_dir = (data_dir or Path(settings.api.data_dir)).expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)

    lock = _lock_data_dir(data_dir)
    supervisor = _Supervisor()
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    reason = "stopped"
    try:
        _start(supervisor, settings, host, port, data_dir, worker)
        while True:
            supervisor.tend()
            time.sleep(0.3)
    except _Stop as stop:
        reason = f"received {stop}"
    except click.ClickException as failure:
        reason = failure.message
        raise
    except MatchaError as failure:  # an embedded server that would not start, say
        reason = failure.detail
        raise click.ClickException(failure.detail) from failure
    finally:
        # A second Ctrl-C must not cut the clean-up short (it would orphan the servers).
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        click.echo(f"matcha run: {reason}; shutting down", err=True)
        supervisor.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        lock.close()
        click.echo("matcha run: everything stopped", err=True)


def _start(
    supervisor: _Supervisor, settings: Any, host: str, port: int, data_dir: Path, worker: bool
) -> None:
    database_url = migrate_url = settings.database.url
    if database_url:
        click.echo(f"PostgreSQL:  {_redact_url(database_url)} (DATABASE_URL)")
    else:
        click.echo(f"matcha run: starting PostgreSQL (data in {data_dir / 'postgres'}) ...")
        server_url, pg = start_postgres(data_dir / "postgres")
        supervisor.servers.append(("PostgreSQL", pg))
        migrate_url, database_url = _embedded_database(server_url)
        click.echo(f"PostgreSQL:  {database_url} (embedded, pid {pg.pid})")

    redis_url = settings.redis.url
    if redis_url:
        click.echo(f"Redis:       {_redact_url(redis_url)} (REDIS_URL)")
    else:
        click.echo(f"matcha run: starting Redis (data in {data_dir / 'redis'}) ...")
        redis_url, rd = start_redis(data_dir / "redis")
        supervisor.servers.append(("Redis", rd))
        click.echo(f"Redis:       {redis_url} (embedded, pid {rd.pid})")

    if settings.database.migrate_on_start and _apply_migrations(migrate_url):
        click.echo("Migrations:  applied")

    token = admin_token(data_dir)
    # Metrics of every child (API and worker job durations) are summed by the API's
    # /metrics: prometheus-client's multiprocess mode, one fresh folder per run.
    metrics_dir = data_dir / "run" / "metrics"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir(parents=True)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "MATCHA_ADMIN_TOKEN": token,
        "MATCHA_HOST": host,
        "MATCHA_PORT": str(port),
        "MATCHA_DATA_DIR": str(data_dir),
        "MATCHA_MIGRATE_ON_START": "0",  # done above, once
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "PYTHONUNBUFFERED": "1",
    }
    log_config = data_dir / "run" / "uvicorn-logging.json"
    log_config.write_text(json.dumps(uvicorn_log_config()))
    api = supervisor.spawn(
        "API",
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "service.app:create_app",
            "--host",
            host,
            "--port",
            str(port),
            "--log-config",
            str(log_config),
            # our middleware logs each request (with its id) instead of uvicorn
            "--no-access-log",
            # each response in one write, as `matcha api` serves (service/api/http_protocol.py)
            "--http",
            HTTP_PROTOCOL,
            "--ws-max-size",
            str(WS_MAX_MESSAGE_BYTES),
            # open connections get this long after the live streams were told to end
            # (service/ops/stopping.py bounds the whole stop to 10 s)
            "--timeout-graceful-shutdown",
            str(int(DRAIN_S)),
        ],
        env,
    )
    if not worker:
        click.echo("Worker:      not started (--no-worker)")
    elif "worker" in COMMANDS:
        w = supervisor.spawn("worker", [sys.executable, "-m", "service.cli", "worker"], env)
        click.echo(f"Worker:      matcha worker (pid {w.proc.pid})")
    else:
        click.echo("Worker:      note: `matcha worker` is not registered yet; no worker started")

    url_host = "127.0.0.1" if host in {"0.0.0.0", "::"} else host
    base = f"http://{url_host}:{port}"
    _wait_for_http(f"{base}/healthz", api, timeout=60)
    click.echo(f"API:         {base}/ (pid {api.proc.pid}); docs at {base}/schema/swagger")
    click.echo(f"Admin token: {token}")
    click.echo(f"Data:        {data_dir}")
    click.echo(f"Matcha is running at {base}/ — press Ctrl-C to stop.", color=False)
