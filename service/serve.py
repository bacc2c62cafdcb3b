"""Run the API with uvicorn: ``serve(settings, host, port, workers)`` and the
console command ``matcha api``. (``matcha run``, owned by the ops part, starts
the embedded servers first and then calls ``serve``.)"""

from __future__ import annotations

import os
from typing import Any

import click
import psycopg
import uvicorn

from service.api.http_protocol import PROTOCOL, WS_MAX_MESSAGE_BYTES
from service.app import create_app
from service.cli_defaults import database_url, default_data_dir, local_redis_url
from service.ops.stopping import DRAIN_S
from service.settings import Settings, load_settings


def serve(settings: Settings | None, host: str, port: int, workers: int = 1) -> None:
    """Serve ``create_app`` until interrupted (SIGTERM: stopped within 10 s).

    With several workers uvicorn starts separate processes that each call the
    factory, so they read the settings from the environment: the database and
    Redis URLs given here are exported first.
    """
    settings = settings or load_settings()
    if settings.database.url:
        os.environ["DATABASE_URL"] = settings.database.url
    if settings.redis.url:
        os.environ["REDIS_URL"] = settings.redis.url
    # One set of server options for both ways of running (the HTTP protocol, the
    # WebSocket message cap): several workers need the app as an import string.
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "http": PROTOCOL,
        "ws_max_size": WS_MAX_MESSAGE_BYTES,
        "access_log": False,
        "log_level": "info",
        # On SIGTERM the live streams end at once (service/ops/stopping.py); a client
        # that never takes its close is waited for this long, and the whole stop is
        # bounded to 10 s by the stop's watchdog.
        "timeout_graceful_shutdown": int(DRAIN_S),
    }
    if workers > 1:
        uvicorn.run("service.app:create_app", factory=True, workers=workers, **options)
        return
    uvicorn.run(create_app(settings), **options)


@click.command("api")
@click.option(
    "--host", default=None, help="Interface to listen on (default: $MATCHA_HOST or 127.0.0.1)."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port (default: $MATCHA_PORT or 8000).",
)
@click.option("--workers", type=int, default=1, show_default=True, help="uvicorn worker processes.")
def api_command(host: str | None, port: int | None, workers: int) -> None:
    """Serve the HTTP API (DATABASE_URL, else `make run`'s database; REDIS_URL optional,
    else `make run`'s Redis when it runs)."""
    # Beside `make run`, like every console command: its servers when none is named.
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = database_url(None, None)
    if not os.environ.get("REDIS_URL"):
        found = local_redis_url(default_data_dir())
        if found:
            os.environ["REDIS_URL"] = found
    settings = load_settings()
    host = host or settings.api.host
    port = port or settings.api.port
    if not settings.database.url:
        raise click.UsageError("DATABASE_URL is not set: give the event store's PostgreSQL URL.")
    # Asked once before uvicorn starts, so a wrong URL is one sentence (matcha's
    # error line, exit 2), not the lifespan's traceback from inside uvicorn.
    psycopg.connect(settings.database.url, connect_timeout=10).close()
    click.echo(f"Matcha API on http://{host}:{port}  (OpenAPI: /schema/openapi.json)")
    serve(settings, host, port, workers)
