"""Connection pools and database URLs."""

from __future__ import annotations

import select
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

GET_CONNECTION_TIMEOUT_S = 10.0

TRANSIENT_ERRORS = (psycopg.OperationalError, PoolTimeout)
"""Errors worth retrying: the server is starting, restarting or briefly unreachable."""


async def open_pool(url: str, *, min_size: int = 2, max_size: int = 20) -> AsyncConnectionPool:
    """Open a pool of autocommit connections and wait until it holds `min_size` of them.

    Connections are checked before being lent out (`check_idle_connection`), so
    a pool outlives a PostgreSQL restart: dead connections are dropped and new
    ones made. Autocommit: every transaction is an explicit
    ``conn.transaction()`` block, never an implicit BEGIN left open.
    """
    pool = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True},
        check=check_idle_connection,
        open=False,
        name="matcha-store",
        # A request waits this long for a connection, then fails (the API answers
        # 503 database_unavailable): psycopg's 30 s default would hold a client
        # that long while the server restarts.
        timeout=GET_CONNECTION_TIMEOUT_S,
    )
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(TRANSIENT_ERRORS),
        wait=wait_exponential(multiplier=0.2, max=3),
        stop=stop_after_attempt(6),
        reraise=True,
    ):
        with attempt:
            await pool.open(wait=True, timeout=10)
    return pool


async def check_idle_connection(conn: psycopg.AsyncConnection[Any]) -> None:
    """Raise if a connection about to be lent out is dead; cheap when it is alive.

    ``AsyncConnectionPool.check_connection`` pings the server: one round trip
    per borrow, which held bench/bench_store.py's append_ratio near 0.3.
    An idle connection has nothing to read, so a socket that is readable means
    the server sent something (a shutdown or termination notice, or EOF): only
    then is it pinged, and a dead one raises and is replaced by the pool.
    """
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("connection is closed")
    # poll, not select: select() refuses descriptors above 1023.
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    if poller.poll(0):
        await AsyncConnectionPool.check_connection(conn)


def with_database(url: str, dbname: str, *, user: str | None = None) -> str:
    """The same server URL pointing at another database (and optionally another user)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        host = netloc.rsplit("@", 1)[-1]
        netloc = f"{quote(user, safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, "/" + quote(dbname, safe=""), parts.query, ""))


@contextmanager
def scratch_database(server_url: str, prefix: str, *, template: str | None = None) -> Iterator[str]:
    """A new database of the caller's own on this server, for tests and benches:
    yields its name (``prefix`` and a random suffix), drops it on the way out.

    The drop is ``WITH (FORCE)``: a pool or a server process the caller left
    connected must not keep the database alive.
    """
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    try:
        yield name
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/") or "postgres"
