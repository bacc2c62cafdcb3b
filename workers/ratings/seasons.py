"""The season jobs of a ladder: start or end its seasons when their dates come
(queued with RQ's ``enqueue_at`` when a season is scheduled; ``matcha worker``
runs RQ's scheduler), and freeze a season's standings once the ratings have
passed its end. Every change is decided by ``service.seasons.engine``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import psycopg

from schemas.seasons import EndSeason, FreezeStandings, StartSeason
from service.errors import MatchaError
from service.seasons import engine, stream
from service.seasons.standings import SEASON_ENTRIES, ranked
from workers import db

log = logging.getLogger("matcha.workers.seasons")

load = stream.load


def boundaries_of(loaded: stream.Loaded) -> list[tuple[int, float | None, int]]:
    """The season boundaries in log order: ``(position, soft reset or None for an
    end, the stream version that placed it)``."""
    from schemas.seasons import SeasonEnded, SeasonStarted

    resets: dict[str, float] = {}
    marks: list[tuple[int, int, float | None, int]] = []
    for version, event in enumerate(loaded.events, start=1):
        match event:
            case SeasonStarted():
                marks.append((event.at_position, 1, resets[event.season_id], version))
            case SeasonEnded():
                marks.append((event.at_position, 0, None, version))
            case _:
                resets[event.season_id] = getattr(event, "soft_reset", 0.0)
    return [(p, f, v) for p, _, f, v in sorted(marks)]


def _last_position(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(stream.LAST_POSITION).fetchone()
    return int(row[0]) if row else 0


def advance(
    conn: psycopg.Connection[Any], ladder_id: str, now: datetime | None = None
) -> list[str]:
    """Start and end the ladder's seasons whose dates have come; what it did."""
    now = now or datetime.now(UTC)
    done = []
    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('matcha.seasons.' || %s, 0))",
            (ladder_id,),
        )
        loaded = stream.load(conn, ladder_id)
        state = engine.fold(loaded.events)
        for season in state.seasons:
            command: EndSeason | StartSeason
            if season.phase == "running" and season.ends_at <= now:
                command = EndSeason(
                    season_id=season.season_id,
                    at_position=_last_position(conn),
                    now=now,
                    by="system",
                    early=False,
                )
            elif season.phase == "scheduled" and season.starts_at <= now:
                command = StartSeason(
                    season_id=season.season_id, at_position=_last_position(conn), now=now
                )
            else:
                continue
            try:
                events = engine.decide(state, command)
            except MatchaError as refused:  # e.g. another season still runs
                log.info(
                    "ladder %s: season %s not moved (%s)", ladder_id, season.season_id, refused.code
                )
                continue
            stream.append(conn, ladder_id, loaded, events, "system")
            loaded = stream.load(conn, ladder_id)
            for event in events:
                state = engine.evolve(state, event)
            done.append(f"{type(command).__name__} {season.season_id}")
    return done


def freeze_due(
    conn: psycopg.Connection[Any], ladder_id: str, loaded: stream.Loaded, high: int
) -> None:
    """Freeze the standings of every ended season the ratings have now passed
    (inside the ratings job's transaction: its tables are the ones just written)."""
    state = engine.fold(loaded.events)
    for season in state.seasons:
        if season.phase != "ended" or season.end_position is None:
            continue
        if season.end_position > high or season.start_position is None:
            continue
        rows = conn.execute(
            SEASON_ENTRIES,
            {"ladder": ladder_id, "start": season.start_position, "end": season.end_position},
        ).fetchall()
        events = engine.decide(
            state, FreezeStandings(season_id=season.season_id, standings=ranked(rows))
        )
        stream.append(conn, ladder_id, loaded, events, "system")
        loaded = stream.load(conn, ladder_id)
        for event in events:
            state = engine.evolve(state, event)


def move_seasons(ladder_id: str, *, database_url: str | None = None) -> dict[str, Any]:
    """The scheduled RQ job (at a season's start or end date): move what is due,
    then bring the ladder's ratings up to date (which freezes an ended season)."""
    from workers.ratings.job import apply_ladder

    conn = db.connection(database_url)
    done = advance(conn, ladder_id)
    result = apply_ladder(conn, ladder_id, reader=db.connection(database_url, purpose="reader"))
    return {"ladder_id": ladder_id, "seasons": done, "ratings": result}


_DUE = """
SELECT DISTINCT s.ladder_id FROM ladder_events s
WHERE s.type = 'season_scheduled' AND (
    ((s.data ->> 'starts_at')::timestamptz <= %(now)s AND NOT EXISTS (
        SELECT 1 FROM ladder_events x WHERE x.ladder_id = s.ladder_id
          AND x.type = 'season_started' AND x.data ->> 'season_id' = s.data ->> 'season_id'))
    OR ((s.data ->> 'ends_at')::timestamptz <= %(now)s AND NOT EXISTS (
        SELECT 1 FROM ladder_events x WHERE x.ladder_id = s.ladder_id
          AND x.type = 'standings_frozen' AND x.data ->> 'season_id' = s.data ->> 'season_id')))
ORDER BY 1
"""


def due_ladders(conn: psycopg.Connection[Any], now: datetime | None = None) -> list[str]:
    """Ladders with a season whose start or end date has passed and that has not
    started, or ended and been frozen: for a catch-up to enqueue their ratings
    job (which moves the season and freezes it), when a scheduled job was lost."""
    rows = conn.execute(_DUE, {"now": now or datetime.now(UTC)}).fetchall()
    return [str(r[0]) for r in rows]
