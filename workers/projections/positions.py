"""Each projection runner's place in the global log (``projection_positions``).

A pass takes its runner's row ``FOR UPDATE SKIP LOCKED`` in the transaction
that applies a stretch of the log and writes the new position in that same
transaction (ARCHITECTURE invariant 5). Why a row lock and not a lock key in
Redis with an expiry: of several workers exactly one applies a stretch at a
time, the others skip the pass instead of queueing behind it, and a worker
that dies mid-pass frees the row the moment PostgreSQL sees its connection
close (its transaction rolls back, so whoever takes the row next resumes from
the last committed position). No lock outlives its owner.
"""

from __future__ import annotations

from typing import Any

import psycopg


def ensure(conn: psycopg.Connection[Any], name: str) -> None:
    """Make sure the runner has a row (a projection added after the migration starts at 0)."""
    conn.execute(
        "INSERT INTO projection_positions (name, position) VALUES (%s, 0) ON CONFLICT DO NOTHING",
        (name,),
    )


def claim(conn: psycopg.Connection[Any], name: str) -> int | None:
    """Inside a transaction: the runner's position, its row locked until the
    transaction ends; None when another worker's pass holds it."""
    row = conn.execute(
        "SELECT position FROM projection_positions WHERE name = %s FOR UPDATE SKIP LOCKED",
        (name,),
    ).fetchone()
    return None if row is None else int(row[0])


def advance(conn: psycopg.Connection[Any], name: str, position: int) -> None:
    """Inside the claiming transaction: record the last position applied."""
    conn.execute(
        "UPDATE projection_positions SET position = %s, updated_at = now()"
        " WHERE name = %s AND position < %s",
        (position, name, position),
    )


def positions(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Every runner's position (no lock taken)."""
    return {
        str(name): int(position)
        for name, position in conn.execute(
            "SELECT name, position FROM projection_positions"
        ).fetchall()
    }
