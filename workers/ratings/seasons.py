"""The season moves of the workers: start or end a ladder's seasons when their
dates come (``advance``: the scheduled job ``job.move_seasons``, queued with
RQ's ``enqueue_at`` when a season is scheduled, and every ratings job), and
freeze a season's standings once the ratings have passed its end
(``freeze_due``, inside the ratings job's transaction). Each move is one call
of the seasons core (``service.seasons.service.execute``); which moves are due
is the engine's rule (``engine.due``, ``engine.to_freeze``).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import psycopg

from schemas.seasons import FreezeStandings
from service.errors import MatchaError
from service.seasons import engine, service
from service.seasons.standings import SEASON_ENTRIES, ranked
from service.seasons.stream import every_row
from service.store import matchlog
from service.store.ops import run

log = logging.getLogger("matcha.workers.seasons")


def advance(
    conn: psycopg.Connection[Any], ladder_id: str, now: datetime | None = None
) -> list[str]:
    """Start and end the ladder's seasons whose dates have come; what it did."""
    now = now or datetime.now(UTC)
    done = []
    with conn.transaction():
        folded = run(conn, service.current(ladder_id))
        at_position = run(conn, matchlog.last_position())
        for command in engine.due(folded.state, now, at_position):
            try:
                run(conn, service.execute(ladder_id, command, actor="system"))
            except MatchaError as refused:  # e.g. another season still runs
                log.info(
                    "ladder %s: season %s not moved (%s)",
                    ladder_id,
                    command.season_id,
                    refused.code,
                )
                continue
            done.append(f"{type(command).__name__} {command.season_id}")
    return done


def freeze_due(conn: psycopg.Connection[Any], ladder_id: str, high: int) -> None:
    """Freeze the standings of every ended season the ratings have now passed
    (inside the ratings job's transaction: its tables are the ones just written)."""
    folded = run(conn, service.current(ladder_id))
    for season in engine.to_freeze(folded.state, high):
        rows = conn.execute(
            SEASON_ENTRIES,
            {"ladder": ladder_id, "start": season.start_position, "end": season.end_position},
        ).fetchall()
        command = FreezeStandings(season_id=season.season_id, standings=ranked(rows))
        run(conn, service.execute(ladder_id, command, actor="system"))


def due_ladders(conn: psycopg.Connection[Any], now: datetime | None = None) -> list[str]:
    """Ladders with a season whose start or end date has passed and that has not
    started, or ended and been frozen (``engine.overdue``): for a catch-up to
    enqueue their ratings job (which moves the season and freezes it), when a
    scheduled job was lost."""
    now = now or datetime.now(UTC)
    streams: dict[str, list[Any]] = {}
    for row in run(conn, every_row()):
        streams.setdefault(row.stream_id, []).append(row.event)
    return sorted(
        ladder for ladder, events in streams.items() if engine.overdue(engine.fold(events), now)
    )
