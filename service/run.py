"""`matcha run`: the whole service on one machine, in one command.

Starts (or reuses, when DATABASE_URL / REDIS_URL are set) PostgreSQL and
Redis, applies the migrations, then runs the API (uvicorn) and one worker
as child processes, and prints where to find them. Restarts, the stop order
and the stop deadline are the supervisor's (``service.supervisor``): a child
that exits is started again with backoff; Ctrl-C or SIGTERM stops the worker
and the API first, then Redis, then PostgreSQL, everything within
``service.supervisor.STOP_DEADLINE_S``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from service.api.http_protocol import PROTOCOL as HTTP_PROTOCOL
from service.api.http_protocol import WS_MAX_MESSAGE_BYTES
from service.cli import COMMANDS
from service.embedded import start_postgres, start_redis
from service.ops.logging import uvicorn_log_config
from service.ops.stopping import DRAIN_S
from service.settings import load_settings
from service.store.db import with_database
from service.store.migrate import apply_migrations
from service.supervisor import Supervisor, lock_folder, redact_url, wait_for_http


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


def app_database(server_url: str) -> tuple[str, str]:
    """Database `matcha` on a server we started: (superuser URL to migrate, app URL).

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

    lock = lock_folder(data_dir, "matcha run")
    supervisor = Supervisor("matcha run")
    try:
        supervisor.serve(lambda: _start(supervisor, settings, host, port, data_dir, worker))
    finally:
        lock.close()


def _start(
    supervisor: Supervisor, settings: Any, host: str, port: int, data_dir: Path, worker: bool
) -> None:
    database_url = migrate_url = settings.database.url
    if database_url:
        click.echo(f"PostgreSQL:  {redact_url(database_url)} (DATABASE_URL)")
    else:
        click.echo(f"matcha run: starting PostgreSQL (data in {data_dir / 'postgres'}) ...")
        server_url, pg = start_postgres(data_dir / "postgres")
        supervisor.servers.append(("PostgreSQL", pg))
        migrate_url, database_url = app_database(server_url)
        click.echo(f"PostgreSQL:  {database_url} (embedded, pid {pg.pid})")

    redis_url = settings.redis.url
    if redis_url:
        click.echo(f"Redis:       {redact_url(redis_url)} (REDIS_URL)")
    else:
        click.echo(f"matcha run: starting Redis (data in {data_dir / 'redis'}) ...")
        redis_url, rd = start_redis(data_dir / "redis")
        supervisor.servers.append(("Redis", rd))
        click.echo(f"Redis:       {redis_url} (embedded, pid {rd.pid})")

    if settings.database.migrate_on_start:
        apply_migrations(migrate_url)
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
    wait_for_http(f"{base}/healthz", api, timeout=60)
    click.echo(f"API:         {base}/ (pid {api.proc.pid}); docs at {base}/schema/swagger")
    click.echo(f"Admin token: {token}")
    click.echo(f"Data:        {data_dir}")
    # A newcomer's next step is a console command in another terminal: say how it is spelt
    # (the venv is not on their PATH; ./matcha at the root runs it, README "console commands").
    click.echo("Commands:    ./matcha --help (in another terminal, at the repository's root)")
    click.echo(f"Matcha is running at {base}/ — press Ctrl-C to stop.", color=False)
