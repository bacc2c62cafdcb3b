"""Database access for the jobs: a connection per worker process. (The committed
high-water mark of the log is the store's: ``service.store.matchlog.committed_high``.)

RQ jobs are synchronous, so the workers use psycopg's blocking API. A job
takes the connection of its process (made on first use, remade when it broke),
so a worker that runs a thousand small jobs a second does not connect a
thousand times.
"""

from __future__ import annotations

import os
import threading

import psycopg

from service.settings import load_settings

_local = threading.local()


def database_url() -> str:
    url = load_settings().database.url
    if not url:
        raise RuntimeError("DATABASE_URL is not set: the workers need the events database")
    return url


def connection(url: str | None = None, *, purpose: str = "main") -> psycopg.Connection:
    """This thread's autocommit connection to ``url`` (default ``$DATABASE_URL``).

    ``purpose`` names a second connection when a job needs two at once (a
    full recompute reads the log on one while it writes on the other).
    """
    url = url or database_url()
    cached: dict[tuple[int, str, str], psycopg.Connection] = getattr(_local, "conns", None) or {}
    _local.conns = cached
    # keyed by pid too: a forked work horse must never reuse its parent's socket
    key = (os.getpid(), url, purpose)
    conn = cached.get(key)
    if conn is None or conn.closed or conn.broken:
        conn = psycopg.connect(url, autocommit=True)
        cached[key] = conn
    return conn


def close_connections() -> None:
    for conn in (getattr(_local, "conns", None) or {}).values():
        conn.close()
    _local.conns = {}
