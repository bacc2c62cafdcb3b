"""``update_ladder(ladder_id)``, the RQ job of the ratings projection.

It applies the match_ended events of the ladder's matches in committed global
order, skipping annulled and aborted matches, and records the last global
position it applied in ``ladder_projections`` in the same transaction as the
ratings (so a job that runs twice changes nothing the second time). Two cases:

* only new results since the recorded position: rate them on top of the
  stored table (increment.py, a few rows);
* an annulment of one of the ladder's matches, a season boundary placed
  before the recorded position, or a full recompute asked for: rebuild the
  whole ladder from its log (recompute.py). An annulment changes every later
  rating of everyone who met, directly or not, a player of that match;
  replaying the ladder without it is the simplest way to be exactly right.

Both paths give the same bits (tested against each other). The job also
starts or ends the ladder's seasons that are due (seasons.py: the scheduled
``move_seasons`` does it on time; this catches up when one was lost) and
freezes the standings of a season once the ratings have passed its end.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

import psycopg

from service.ratings.settings import settings_from_json
from service.seasons import engine
from service.seasons import service as seasons_core
from service.store import matchlog
from service.store.ops import run
from workers import db
from workers.ratings import seasons
from workers.ratings.increment import increment
from workers.ratings.recompute import Progress, recompute

log = logging.getLogger("matcha.workers.ratings")

_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('matcha.ladder-ratings.' || %s, 0))"


def _job_progress() -> Progress:
    """Report progress in the running RQ job's meta (a no-op outside a job)."""
    from rq import get_current_job

    job = get_current_job()
    if job is None:
        return lambda phase, done, total: None

    def report(phase: str, done: int, total: int) -> None:
        job.meta["progress"] = {"phase": phase, "done": done, "total": total}
        job.save_meta()  # type: ignore[no-untyped-call]

    return report


def update_ladder(
    ladder_id: str,
    *,
    full: bool = False,
    pause_s: float = 0.0,
    database_url: str | None = None,
) -> dict[str, Any]:
    """The RQ job: bring a ladder's ratings up to the committed end of the log.

    ``full`` rebuilds from scratch even when nothing new happened (the admin
    recompute). ``pause_s`` holds the transaction open before committing: a
    test knob to kill a worker in the middle of a job.
    """
    conn = db.connection(database_url)
    reader = db.connection(database_url, purpose="reader")
    return apply_ladder(
        conn, ladder_id, full=full, pause_s=pause_s, progress=_job_progress(), reader=reader
    )


def apply_ladder(
    conn: psycopg.Connection[Any],
    ladder_id: str,
    *,
    full: bool = False,
    pause_s: float = 0.0,
    progress: Progress | None = None,
    reader: psycopg.Connection[Any] | None = None,
) -> dict[str, Any]:
    """Update one ladder on ``conn``; a full recompute streams the log from ``reader``.

    The reader is a second connection, so the log streams out of one backend
    while the job's transaction (its lock, the deleted rows) stays open in the
    other. It needs no snapshot shared with ``conn``: it reads only positions
    at or below the committed high-water mark, and those rows are final.
    """
    report = progress or (lambda phase, done, total: None)
    started = time.perf_counter()
    seasons.advance(conn, ladder_id)  # seasons due to start or end (before the high mark)
    high = run(conn, matchlog.committed_high())
    with conn.transaction():
        # Two jobs of one ladder must never interleave: both would start from
        # the same recorded position and write the same history rows (or a
        # recompute would delete what an incremental job is adding). The lock
        # is keyed by the ladder, so different ladders still run side by side,
        # and it is transaction-scoped: a worker that dies mid-job drops its
        # connection, PostgreSQL rolls the transaction back and frees the lock.
        conn.execute(_LOCK_SQL, (ladder_id,))
        row = conn.execute("SELECT rating FROM ladders WHERE id = %s", (ladder_id,)).fetchone()
        settings = settings_from_json(row[0] if row else None)
        row = conn.execute(
            "SELECT position, period, seasons_version FROM ladder_projections WHERE ladder_id = %s",
            (ladder_id,),
        ).fetchone()
        after, period, seen = (int(row[0]), row[1], int(row[2])) if row else (0, None, 0)
        stream = run(conn, seasons_core.current(ladder_id))
        # (position, soft reset, stream version)
        marks = engine.boundaries((r.version, r.event) for r in stream.rows)
        if high <= after and not full and stream.version == seen:
            return {"ladder_id": ladder_id, "mode": "none", "position": after, "matches": 0}
        params = {"after": after, "high": high, "ladder": ladder_id}
        annulled = run(conn, matchlog.ladder_annulled_between(ladder_id, after, high))
        # a boundary the last run did not know, at a position it had already passed
        misplaced = any(v > seen and p < after for p, _, v in marks)
        if full or annulled or misplaced or after == 0:
            mode = "full"
            # The recompute holds millions of small tuples and lists, none in
            # a cycle; the cyclic collector would rescan them all again and
            # again (it once tripled the run time), so it rests meanwhile.
            gc_was_on = gc.isenabled()
            gc.disable()
            # each chunk of results is sorted in memory, not on disk
            conn.execute("SET LOCAL work_mem = '32MB'")
            try:
                upto = [(p, f) for p, f, _ in marks if p <= high]
                done = recompute(conn, reader or conn, ladder_id, settings, high, report, upto)
                if done is None:
                    # A match against oneself: not possible through the API, the
                    # log may still hold one. The reference implementation rates it.
                    log.warning(
                        "ladder %s: a match against oneself; recomputing with the"
                        " reference implementation",
                        ladder_id,
                    )
                    conn.execute("DELETE FROM rating_histories WHERE ladder_id = %s", (ladder_id,))
                    conn.execute("DELETE FROM ratings WHERE ladder_id = %s", (ladder_id,))
                    done = increment(conn, ladder_id, settings, {**params, "after": 0}, upto)
            finally:
                if gc_was_on:
                    gc.enable()
        else:
            mode = "incremental"
            # boundaries not applied yet: past the recorded position, or at it and new
            due = [(p, f) for p, f, v in marks if after < p <= high or (p == after and v > seen)]
            done = increment(conn, ladder_id, settings, params, due, period)
        matches, period = done
        conn.execute(
            """INSERT INTO ladder_projections (ladder_id, position, matches, recomputed_at,
                                               period, seasons_version)
               VALUES (%(ladder)s, %(high)s, %(matches)s,
                       CASE WHEN %(full)s THEN now() END, %(period)s, %(seen)s)
               ON CONFLICT (ladder_id) DO UPDATE SET
                   position = excluded.position,
                   matches = CASE WHEN %(full)s THEN excluded.matches
                                  ELSE ladder_projections.matches + excluded.matches END,
                   recomputed_at = coalesce(excluded.recomputed_at,
                                            ladder_projections.recomputed_at),
                   period = excluded.period,
                   seasons_version = excluded.seasons_version,
                   updated_at = now()""",
            {
                "ladder": ladder_id,
                "high": high,
                "matches": matches,
                "full": mode == "full",
                "period": period,
                "seen": stream.version,
            },
        )
        seasons.freeze_due(conn, ladder_id, high)
        if pause_s:
            time.sleep(pause_s)
    elapsed = time.perf_counter() - started
    report("done", matches, matches)
    log.info("ladder %s: %s update, %d matches in %.3fs", ladder_id, mode, matches, elapsed)
    return {
        "ladder_id": ladder_id,
        "mode": mode,
        "position": high,
        "matches": matches,
        "seconds": elapsed,
    }


def move_seasons(ladder_id: str, *, database_url: str | None = None) -> dict[str, Any]:
    """The scheduled RQ job (at a season's start or end date): move what is due,
    then bring the ladder's ratings up to date (which freezes an ended season)."""
    conn = db.connection(database_url)
    done = seasons.advance(conn, ladder_id)
    result = apply_ladder(conn, ladder_id, reader=db.connection(database_url, purpose="reader"))
    return {"ladder_id": ladder_id, "seasons": done, "ratings": result}
