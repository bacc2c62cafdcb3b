"""What the console commands assume when they are not told: the servers of
``make run``, and names where ids are asked for.

* **Where the database and broker are.** ``--database-url`` / ``$DATABASE_URL``
  and ``--redis-url`` / ``$REDIS_URL`` win; without them a command uses the
  servers that ``matcha run`` (``make run``) started on its data folder
  (``--data-dir``, ``$MATCHA_DATA_DIR``, else ``var``): PostgreSQL's socket is
  named in ``<data>/postgres/postmaster.pid``, Redis's port in ``<data>/redis/port``.
  A command that finds neither stops with exit status 2 and says what to do.
* **Names for ids.** A ladder or a player may be given by id or by name (names
  are unique); an unknown one is a usage error (exit status 2) that lists what
  there is, never an empty, successful run.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import click
import psycopg

from service.settings import load_settings
from service.store import matchlog
from service.store.ops import run

APP_USER: Final = "matcha_app"
"""The role the service (and so these commands) logs in as on the embedded server."""
APP_DATABASE: Final = "matcha"
OWNER_USER: Final = "postgres"
"""The embedded server's superuser, which owns the schema: ``matcha migrate`` logs in as it."""

F = TypeVar("F", bound=Callable[..., Any])


def default_data_dir() -> Path:
    return Path(load_settings().api.data_dir)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user (the embedded server under root does)
    return True


def local_database_url(data_dir: Path, user: str = APP_USER) -> str | None:
    """The URL of the PostgreSQL server ``matcha run`` keeps in ``data_dir``, if it runs,
    for ``user`` (the service's role; ``OWNER_USER`` to change the schema).

    ``postmaster.pid`` lines: pid, data folder, start time, port, socket folder, ...
    """
    try:
        lines = (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()
        pid, port, sockets = int(lines[0]), lines[3].strip(), lines[4].strip()
    except (OSError, ValueError, IndexError):
        return None
    if not _alive(pid) or not sockets:
        return None
    return f"postgresql://{user}@/{APP_DATABASE}?host={sockets}&port={port}"


def local_redis_url(data_dir: Path) -> str | None:
    """The URL of the Redis server ``matcha run`` keeps in ``data_dir``, if it answers."""
    try:
        port = int((data_dir / "redis" / "port").read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            pass
    except OSError:
        return None
    return f"redis://127.0.0.1:{port}/0"


def _not_running(what: str, option: str, env: str, data_dir: Path) -> click.UsageError:
    return click.UsageError(
        f"No {what} given and none running in {data_dir.resolve()}: start the service with"
        f" `make run` (or `matcha run --data-dir DIR`, then pass --data-dir DIR), or give"
        f" {option} / ${env}."
    )


def database_url(given: str | None, data_dir: Path | None, user: str = APP_USER) -> str:
    """``given`` (the option or $DATABASE_URL), else ``make run``'s server (as ``user``);
    else exit 2."""
    if given:
        return given
    folder = data_dir or default_data_dir()
    found = local_database_url(folder, user)
    if found is None:
        raise _not_running("database", "--database-url", "DATABASE_URL", folder)
    return found


def redis_url(given: str | None, data_dir: Path | None) -> str:
    """``given`` (the option or $REDIS_URL), else ``make run``'s Redis; else exit 2."""
    if given:
        return given
    folder = data_dir or default_data_dir()
    found = local_redis_url(folder)
    if found is None:
        raise _not_running("Redis", "--redis-url", "REDIS_URL", folder)
    return found


def database_options(f: F) -> F:
    """``--database-url`` (default $DATABASE_URL, else make run's) and ``--data-dir``."""
    f = click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="The data folder of `make run` / `matcha run` whose servers to use when no URL"
        " is given [MATCHA_DATA_DIR, var].",
    )(f)
    return click.option(
        "--database-url",
        envvar="DATABASE_URL",
        default=None,
        help="PostgreSQL URL of the event store [DATABASE_URL; else the database `make run`"
        " started].",
    )(f)


# ---------------------------------------------------------------- names for ids


def _choices(rows: list[tuple[Any, ...]], limit: int = 10) -> str:
    names = [str(r[0]) for r in rows[:limit]]
    more = "" if len(rows) <= limit else f" (and {len(rows) - limit} more)"
    return ", ".join(repr(n) for n in names) + more if names else "none yet"


def resolve_ladder(conn: psycopg.Connection[Any], text: str, *, param: str = "--ladder") -> str:
    """The id of the ladder ``text`` names (its id or its name, exact, else ignoring
    case); a ladder id that only the event log knows is accepted as it is."""
    for sql in (
        "SELECT id FROM ladders WHERE id = %(t)s OR name = %(t)s",
        "SELECT id FROM ladders WHERE lower(name) = lower(%(t)s)",
    ):
        row = conn.execute(sql, {"t": text}).fetchone()
        if row is not None:
            return str(row[0])
    if run(conn, matchlog.ladder_has_matches(text)):
        return text
    names = conn.execute("SELECT name FROM ladders ORDER BY name").fetchall()
    raise click.BadParameter(
        f"no ladder has the id or name {text!r}; ladders: {_choices(names)}", param_hint=param
    )


def resolve_player(conn: psycopg.Connection[Any], text: str, *, param: str = "--player") -> str:
    """The id of the player ``text`` names (id or name, exact, else ignoring case)."""
    for sql in (
        "SELECT id FROM players WHERE id = %(t)s OR name = %(t)s",
        "SELECT id FROM players WHERE lower(name) = lower(%(t)s)",
    ):
        row = conn.execute(sql, {"t": text}).fetchone()
        if row is not None:
            return str(row[0])
    similar = conn.execute(
        "SELECT name FROM players WHERE name ILIKE %s ORDER BY name LIMIT 11",
        (f"%{text[:20]}%",),
    ).fetchall()
    hint = f"; names like it: {_choices(similar)}" if similar else ""
    raise click.BadParameter(f"no player has the id or name {text!r}{hint}", param_hint=param)


def player_match_ids(conn: psycopg.Connection[Any], player_id: str) -> list[str]:
    """Every match the player sat in, oldest first (from the log's match_created events)."""
    return run(conn, matchlog.matches_of_player(player_id))


def ladder_match_ids(conn: psycopg.Connection[Any], ladder_id: str) -> list[str]:
    """Every match of the ladder, oldest first (from the log's match_created events)."""
    return run(conn, matchlog.matches_of_ladder(ladder_id))
