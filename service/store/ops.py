"""One storage operation, run on a blocking or an async connection.

The API is async (psycopg's ``AsyncConnection``) and the workers are blocking
(RQ jobs, the projection runners: ``psycopg.Connection``); both read and append
the same streams. So that each operation is written once, it is a generator:
it *yields* a ``Query`` and is sent back the rows, raises what went wrong and
*returns* its typed answer; ``run(conn, op)`` and ``await run_async(conn, op)``
are the only code that touches a connection. psycopg does the same for its own
sync and async connections (``psycopg.generators``, run by ``waiting.wait`` and
``waiting.wait_async``).

    def version(match_id: str) -> Op[int]:
        rows = yield Query("SELECT max(version) FROM events WHERE match_id = %s", (match_id,))
        return rows[0][0] or 0

    run(conn, version("m-1"))              # a worker
    await run_async(conn, version("m-1"))  # the API

An error of a statement (a psycopg ``Error``) is thrown back into the
operation at its ``yield``, so it is caught where the statement is written
(``except errors.UniqueViolation: raise VersionConflict(...) from exc``).
``Pause`` asks the driver to sleep (the barrier's polite tries).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any, NamedTuple, TypeAlias, TypeVar

import psycopg
from psycopg import AsyncConnection

T = TypeVar("T")

Rows: TypeAlias = list[tuple[Any, ...]]


class Query(NamedTuple):
    """A statement and its parameters; the driver sends back its rows ([] if none)."""

    sql: str
    params: Sequence[Any] | Mapping[str, Any] = ()


class Pause(NamedTuple):
    """Sleep this long, then go on (the driver sends back [])."""

    seconds: float


Op: TypeAlias = Generator[Query | Pause, Rows, T]
"""An operation that answers a ``T``."""


def run(conn: psycopg.Connection[Any], op: Op[T]) -> T:
    """Run ``op`` on a blocking connection (in its transaction, if it is in one)."""
    try:
        step = next(op)
        while True:
            if isinstance(step, Pause):
                time.sleep(step.seconds)
                step = op.send([])
                continue
            try:
                cur = conn.execute(step.sql, step.params)
                rows = cur.fetchall() if cur.description is not None else []
            except psycopg.Error as exc:
                step = op.throw(exc)
            else:
                step = op.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


async def run_async(conn: AsyncConnection[Any], op: Op[T]) -> T:
    """Run ``op`` on an async connection (in its transaction, if it is in one)."""
    try:
        step = next(op)
        while True:
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
                step = op.send([])
                continue
            try:
                cur = await conn.execute(step.sql, step.params)
                rows = await cur.fetchall() if cur.description is not None else []
            except psycopg.Error as exc:
                step = op.throw(exc)
            else:
                step = op.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


def one(rows: Rows) -> tuple[Any, ...] | None:
    """The first row, or None."""
    return rows[0] if rows else None
