"""Database access for the jobs: a connection per worker process, and the
committed high-water mark of the events table.

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
from service.store.events import APPEND_LOCK_KEY

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


def committed_high(conn: psycopg.Connection) -> int:
    """A position ``H`` such that every event at or below it has committed or never will.

    Positions are taken when a row is inserted but transactions commit in
    another order; a projection that read ``position > last`` naively could
    apply 11, record 11, and never see 10 commit later. Appends hold
    ``APPEND_LOCK_KEY`` *shared* from before they take positions until they
    commit (service/store/events.py); taking it exclusively for an instant,
    after reading the sequence, waits until every append that may hold a
    position ``<= H`` has finished. Call this outside any transaction: the
    lock is a session lock, taken and at once released, so appends are held
    up for that instant only and never for a whole job.
    """
    row = conn.execute(
        "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM events_position_seq"
    ).fetchone()
    high = int(row[0]) if row else 0
    conn.execute("SELECT pg_advisory_lock(%s)", (APPEND_LOCK_KEY,))
    conn.execute("SELECT pg_advisory_unlock(%s)", (APPEND_LOCK_KEY,))
    return high
