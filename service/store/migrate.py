"""Schema migrations: plain SQL files in ``migrations/``, applied with yoyo.

Files are numbered ``0001_events.sql``, ``0002_...``; yoyo records what ran in
its ``_yoyo_migration`` table. Migration SQL must not contain a percent sign
or a ``:name`` (yoyo passes each statement to psycopg as a parameterised query).
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from yoyo import get_backend, read_migrations  # type: ignore[import-untyped]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

MIGRATION_LOCK_KEY = 0x6D61746368610002
"""Session advisory lock held while migrating. yoyo's own lock row lives in a
table it creates on first use, so two processes starting on an empty database
would race to create it; an advisory lock needs no table. Advisory locks are
per database, so test databases migrating side by side do not wait for each other."""


def _yoyo_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in {"postgres", "postgresql", "postgresql+psycopg"}:
        raise ValueError(f"expected a postgresql:// URL, got {url!r}")
    return f"postgresql+psycopg://{rest}"


def pending_migrations(url: str) -> list[str]:
    """Ids of the migrations not yet applied to the database at `url`."""
    backend = get_backend(_yoyo_url(url))
    try:
        return [m.id for m in backend.to_apply(read_migrations(str(MIGRATIONS_DIR)))]
    finally:
        backend.connection.close()


def apply_migrations(url: str) -> None:
    """Bring the database at `url` up to date. Idempotent; safe from concurrent processes."""
    with psycopg.connect(url, autocommit=True) as guard:
        guard.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            backend = get_backend(_yoyo_url(url))
            try:
                migrations = backend.to_apply(read_migrations(str(MIGRATIONS_DIR)))
                if migrations:
                    with backend.lock():
                        backend.apply_migrations(migrations)
            finally:
                backend.connection.close()
        finally:
            guard.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
