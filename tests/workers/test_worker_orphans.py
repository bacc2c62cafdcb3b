"""A worker killed with SIGKILL leaves no child behind, and the next one schedules at once.

``matcha worker`` forks an RQ scheduler process and, for each job, a work horse.
Killed without a stop, the worker cannot end them; the kernel does
(``prctl(PR_SET_PDEATHSIG)`` in each, ``workers/rq_worker.py``). The scheduler's
lock in Redis outlives it by RQ's TTL (a minute); the next worker frees a lock
whose holder was a scheduler of this host that no longer runs, so a job scheduled
a second ahead runs seconds after the restart, not a minute later.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import psutil
import psycopg
import pytest
from redis import Redis
from rq.job import Job
from rq.scheduler import SCHEDULER_KEY_TEMPLATE, RQScheduler
from test_worker_crash import _lock_held
from workers_harness import finish_match, new_ladder

from service.broker.jobs import queue, queues
from service.store import EventStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@contextmanager
def matcha_worker(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as sink:
        worker = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "worker", "--fork", "--no-catch-up",
             "--no-projections"],
            env=env, start_new_session=True, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield worker
    finally:
        for child in _descendants(worker.pid):  # a failed test leaves nothing either
            child.kill()
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait(what: str, done: Callable[[], object], timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"{what}; the worker's log:\n{log.read_text()[-3000:]}"
        time.sleep(0.05)


def _scheduler_pid(redis: Redis, queue_name: str) -> int:
    holder = redis.get(RQScheduler.get_locking_key(queue_name))
    if holder is None:
        return 0
    pid = redis.hget(SCHEDULER_KEY_TEMPLATE % holder.decode(), "pid")
    return int(pid or 0)


async def test_given_a_worker_killed_with_sigkill_mid_job_then_no_child_outlives_it_and_the_next_worker_schedules_at_once(  # noqa: E501
    store: EventStore,
    conn: psycopg.Connection,
    redis: Redis,
    redis_prefix: str,
    database_url: str,
    redis_server_url: str,
    tmp_path: Path,
) -> None:
    ladder_id = new_ladder(conn)
    await finish_match(store, ladder_id, "ann", "bob", 0)
    ratings = queue("ratings", redis=redis, prefix=redis_prefix)
    names = [q.name for q in queues(redis=redis, prefix=redis_prefix)]
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_server_url,
        "MATCHA_REDIS_PREFIX": redis_prefix,
    }
    # Given a worker with its scheduler running and a job in a work horse (it pauses
    # 60 s inside its transaction)
    slow: Job = ratings.enqueue(
        "workers.ratings.update_ladder", ladder_id, full=True, pause_s=60.0, job_timeout=300
    )
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    with matcha_worker(env, first_log) as first:
        _wait(
            "the scheduler never took its lock",
            lambda: _scheduler_pid(redis, names[0]),
            60,
            first_log,
        )
        _wait("the job never started", lambda: _lock_held(conn), 60, first_log)
        children = _descendants(first.pid)
        scheduler = _scheduler_pid(redis, names[0])
        assert scheduler in {c.pid for c in children}, (scheduler, children)
        assert len(children) >= 2, children  # the scheduler and the work horse

        # When it is killed with SIGKILL (no stop, no chance to end them itself)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)

        # Then none of its children outlives it: no orphan under init
        deadline = time.monotonic() + 10
        while any(_running(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [c.pid for c in children if _running(c)] == [], "orphans of the killed worker"
        _wait(
            "the killed job's transaction is still open",
            lambda: not _lock_held(conn),
            10,
            first_log,
        )
    assert slow.id  # (its retry is the ratings runner's business: test_worker_crash)

    # And its scheduler's lock is still in Redis (RQ's TTL: a minute) ...
    assert redis.ttl(RQScheduler.get_locking_key(names[0])) > 20
    # ... yet a job scheduled a second ahead runs within seconds of the next worker
    scheduled: Job = ratings.enqueue_in(
        timedelta(seconds=1), "workers.ratings.update_ladder", ladder_id, full=True
    )
    with matcha_worker(env, second_log) as second:
        # (it starts in a few seconds on a quiet machine; a loaded one may take longer)
        _wait("the next worker never started", lambda: "Listening" in second_log.read_text(),
              60, second_log)  # fmt: skip
        _wait(
            "the next worker did not take the scheduler lock at once",
            lambda: _scheduler_pid(redis, names[0]) in {c.pid for c in _descendants(second.pid)},
            10,
            second_log,
        )
        _wait(
            "the scheduled job did not run",
            lambda: scheduled.get_status(refresh=True) == "finished",
            20,
            second_log,
        )
