"""A worker process killed in the middle of a recompute leaves nothing half
written; after the retry (the ratings runner's sweep finds the ladder behind its
log) the ratings are right."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest
from redis import Redis
from rq.job import Job
from workers_harness import finish_match, hand_elo, new_ladder, table

from service.broker.jobs import queue
from service.store import EventStore
from workers.projections import RatingsProjection

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _lock_held(conn: psycopg.Connection) -> bool:
    """A job's transaction is open and holds the ladder lock (it has written its rows)."""
    return (
        conn.execute(
            "SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()"
            " AND a.state = 'idle in transaction'"
        ).fetchone()
        is not None
    )


async def test_a_worker_killed_mid_job_leaves_ratings_right_after_the_retry(
    store: EventStore,
    conn: psycopg.Connection,
    redis: Redis,
    redis_prefix: str,
    database_url: str,
    redis_server_url: str,
) -> None:
    ladder_id = new_ladder(conn)
    results = [("ann", "bob", 0), ("bob", "cat", None), ("cat", "ann", 1), ("ann", "cat", 0)]
    for p0, p1, winner in results[:2]:
        await finish_match(store, ladder_id, p0, p1, winner)
    # The first two results are rated; the next two arrive, then a slow
    # recompute (it pauses 60 s before committing) is killed mid-job.
    from workers.ratings import apply_ladder

    apply_ladder(conn, ladder_id)
    rated_before = table(conn, ladder_id)
    for p0, p1, winner in results[2:]:
        await finish_match(store, ladder_id, p0, p1, winner)
    job: Job = queue("ratings", redis=redis, prefix=redis_prefix).enqueue(
        "workers.ratings.update_ladder", ladder_id, full=True, pause_s=60.0, job_timeout=300
    )

    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_server_url,
        "MATCHA_REDIS_PREFIX": redis_prefix,
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli",
            "worker",
            "--burst",
            "--no-catch-up",
            "--fork",
            "--no-projections",
        ],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not _lock_held(conn):
            assert worker.poll() is None, worker.stdout.read().decode() if worker.stdout else ""
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
        assert job.get_status(refresh=True) == "started"
    finally:
        # The work horse runs the job in a session of its own (RQ calls setsid),
        # so it is found as a child of the worker and killed first.
        for pid in _children(worker.pid):
            os.kill(pid, signal.SIGKILL)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)

    # PostgreSQL rolled the job's transaction back: nothing of it is visible.
    deadline = time.monotonic() + 10
    while _lock_held(conn):
        assert time.monotonic() < deadline, "the killed job's transaction is still open"
        time.sleep(0.05)
    assert table(conn, ladder_id) == rated_before

    # The retry: the ratings runner's sweep finds the ladder behind its log.
    assert RatingsProjection(database_url).sweep(conn) == 1

    ratings: dict[str, float] = {}
    games: dict[str, int] = {}
    for p0, p1, winner in results:
        score = 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
        hand_elo(ratings, games, set(), p0, p1, score)
    stored = table(conn, ladder_id)
    assert set(stored) == set(ratings)
    for player, rating in ratings.items():
        assert math.isclose(stored[player][0], rating, abs_tol=1e-9)
        assert stored[player][1] == games[player]
