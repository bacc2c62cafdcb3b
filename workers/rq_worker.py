"""An RQ worker that outlives its broker and stops when told.

RQ's own loop quits when Redis goes away in the middle of a job (its work-horse
monitor meets the connection error) and returns from ``work()``. Here that is
not the end: ``serve`` waits for Redis with backoff (tenacity), puts the job
that was interrupted back at the front of its queue (its work horse is ended
first, so it never runs twice at once; every job is idempotent and
transactional, so a re-run is exact), and works again under a new worker
registration. Only a stop request ends the loop.

A stop (SIGTERM, SIGINT) is bounded: RQ's warm shutdown lets the current job
finish for up to ``JOB_GRACE_S``; then the job is cut short (a cold shutdown:
its horse is killed, its transaction rolls back) and put back in its queue
for the next worker, and the process ends within
``service.ops.stopping.STOP_DEADLINE_S``.

A worker that dies without a stop (SIGKILL, the OOM killer) takes its children
with it: its RQ scheduler process and its work horse ask the kernel for SIGKILL
when their parent dies (``prctl(PR_SET_PDEATHSIG)``, Linux), so none is left
under init holding the scheduler lock or a job's transaction. The next worker
then takes the lock at once: a lock whose holder was a scheduler of this host
that no longer runs is freed (token-checked) instead of waiting out its TTL.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue, SimpleWorker, Worker
from rq.defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from rq.job import Job, JobStatus
from rq.scheduler import SCHEDULER_KEY_TEMPLATE, RQScheduler
from rq.scripts import release_lock
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_when_event_set,
    wait_exponential,
    wait_random,
)

from service.ops.jobs import TimedJob
from service.ops.stopping import process_stop
from workers import rq_cluster

log = logging.getLogger("matcha.workers.rq")

JOB_GRACE_S = 6.0
"""How long a stop waits for the running job before cutting it short."""
MAINTENANCE_S = 60


def redis_connection(url: str) -> Redis:
    """RQ's connection: no read timeout (its dequeue blocks on BLPOP for minutes, and a
    timeout there makes RQ quit), keepalive so a vanished server is noticed. On a Redis
    Cluster (``redis+cluster://``) the master of RQ's one hash slot, found again after a
    failover (``workers.rq_cluster``; needs ``RQ_KEY_PREFIX={rq}``)."""
    return rq_cluster.connection(url, socket_connect_timeout=2.0, socket_keepalive=True)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> None:
    """In a child of ``parent_pid``: be killed (SIGKILL) when the parent dies, however
    it dies. Linux only (elsewhere a no-op). If the parent is already gone (it died
    between the fork and this call, so the kernel will never signal), exit now."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
        return
    if os.getppid() != parent_pid:
        os._exit(1)


def _pid_runs(pid: int) -> bool:
    """The process runs: it exists and is not a zombie (a killed orphan waits to be
    reaped by init, which may take a while; it holds nothing any more)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc here: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def free_locks_of_dead_schedulers(redis: Redis, queue_names: Sequence[str]) -> list[str]:
    """Free each queue's scheduler lock whose holder was a scheduler process on this
    host that no longer runs; the queues freed. A holder elsewhere, or one whose record
    expired, keeps its lock until RQ's TTL (nobody here can tell it is dead)."""
    freed = []
    host = socket.gethostname()
    for name in queue_names:
        key = RQScheduler.get_locking_key(name)
        holder = redis.get(key)
        if holder is None:
            continue
        token = _text(holder)
        raw: dict[Any, Any] = redis.hgetall(SCHEDULER_KEY_TEMPLATE % token)
        record = {_text(k): _text(v) for k, v in raw.items()}
        pid = int(record.get("pid") or 0)
        if record.get("hostname") != host or pid <= 0 or _pid_runs(pid):
            log.debug("scheduler lock for %s is held by %s (%s)", name, token, record)
            continue
        if release_lock(redis, key, token):  # only if it still holds it
            log.warning(
                "scheduler lock for %s was held by scheduler %s (pid %d), which is gone; freed it",
                name,
                token,
                pid,
            )
            freed.append(name)
    return freed


class DyingScheduler(RQScheduler):
    """RQ's scheduler, whose process dies with the worker that started it, and which
    takes over the locks a dead scheduler of this host left behind."""

    _worker_pid = 0

    def acquire_locks(self, auto_start: bool = False) -> set[str]:
        free_locks_of_dead_schedulers(self.connection, sorted(self._queue_names))
        locks: set[str] = super().acquire_locks(auto_start)  # type: ignore[no-untyped-call]
        return locks

    def start(self) -> Any:
        self._worker_pid = os.getpid()
        return super().start()  # type: ignore[no-untyped-call]

    def work(self) -> None:  # in the scheduler's own (forked) process
        die_with_parent(self._worker_pid)
        super().work()  # type: ignore[no-untyped-call]


class _Mixin:
    """What ``serve`` needs of an RQ worker: the job it was running when it failed,
    a stop request that reaches ``process_stop`` (and is bounded), and a scheduler
    that dies with it."""

    interrupted: Job | None = None
    scheduler: RQScheduler | None
    connection: Redis

    def _start_scheduler(
        self,
        burst: bool = False,
        logging_level: str | None = "INFO",
        date_format: str = DEFAULT_LOGGING_DATE_FORMAT,
        log_format: str = DEFAULT_LOGGING_FORMAT,
    ) -> None:
        """RQ's ``Worker._start_scheduler`` (rq 2.x, 3.x), with ``DyingScheduler``."""
        self.scheduler = scheduler = DyingScheduler(
            self.queues,  # type: ignore[attr-defined]
            connection=self.connection,
            logging_level=logging_level if logging_level is not None else "INFO",
            date_format=date_format,
            log_format=log_format,
            serializer=self.serializer,  # type: ignore[attr-defined]
        )
        scheduler.acquire_locks()
        if not scheduler.acquired_locks:
            return
        if burst:
            try:
                scheduler.register_birth()
                scheduler.enqueue_scheduled_jobs()  # type: ignore[no-untyped-call]
            finally:
                scheduler.release_locks()  # type: ignore[no-untyped-call]
                scheduler.register_death()
        else:
            scheduler.start()

    def execute_job(self, job: Job, queue: Queue) -> None:
        try:
            super().execute_job(job, queue)  # type: ignore[misc]
        except BaseException:
            self.interrupted = job
            raise

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        if process_stop.request(signal.Signals(signum).name):
            _cut_short_after(JOB_GRACE_S)
        super().request_stop(signum, frame)  # type: ignore[misc]


class ForkingWorker(_Mixin, Worker):
    """``rq.Worker``: each job in a forked work horse, which dies with the worker."""

    _worker_pid = 0

    def fork_work_horse(self, job: Job, queue: Queue) -> None:
        self._worker_pid = os.getpid()
        super().fork_work_horse(job, queue)

    def main_work_horse(self, job: Job, queue: Queue) -> None:  # in the horse
        die_with_parent(self._worker_pid)
        super().main_work_horse(job, queue)


class InProcessWorker(_Mixin, SimpleWorker):
    """``rq.SimpleWorker``: each job in the worker process (cheaper for small jobs)."""


def _cut_short_after(seconds: float) -> None:
    """A second SIGTERM later, if the process is still here: RQ's cold shutdown."""

    def again() -> None:
        log.warning(
            "the running job did not end within %.0f s of the stop; cutting it short", seconds
        )
        with contextlib.suppress(ProcessLookupError):
            os.kill(os.getpid(), signal.SIGTERM)

    timer = threading.Timer(seconds, again)
    timer.daemon = True
    timer.start()


def _requeue(job: Job | None, redis: Redis) -> None:
    """Put an interrupted job back at the front of its queue, unless it finished."""
    if job is None:
        return
    try:
        job.refresh()  # type: ignore[no-untyped-call]
        if job.get_status(refresh=False) in (JobStatus.FINISHED, JobStatus.FAILED):
            return
        Queue(job.origin, connection=redis, job_class=TimedJob).enqueue_job(job, at_front=True)
        log.warning("job %s (%s) was interrupted; queued again", job.id, job.func_name)
    except Exception:  # the job is gone with Redis: the runners cover end-of-match work
        log.warning("could not queue the interrupted job %s again", job.id, exc_info=True)


def _end_horse(worker: Worker | SimpleWorker) -> None:
    """A work horse left running by a worker that gave up: end it before the re-run."""
    pid = getattr(worker, "horse_pid", 0)
    if not pid:
        return
    with contextlib.suppress(ProcessLookupError, ChildProcessError, OSError):
        os.killpg(pid, signal.SIGKILL)  # the horse leads its own process group (setpgrp)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)


def serve(
    queue_names: Sequence[str],
    redis: Redis,
    *,
    fork: bool = True,
    burst: bool = False,
    with_scheduler: bool = True,
    on_start: Callable[[], None] = lambda: None,
) -> None:
    """Work the queues until a stop request (or, ``burst``, until they are empty)."""
    stop = process_stop.event
    waiting = Retrying(
        retry=retry_if_exception_type((RedisError, OSError)),
        wait=wait_exponential(multiplier=0.2, max=5.0) + wait_random(0, 0.2),
        stop=stop_when_event_set(stop),
        sleep=_pause,
        before_sleep=_log_wait,
    )
    cls: type[ForkingWorker] | type[InProcessWorker] = ForkingWorker if fork else InProcessWorker
    while not stop.is_set():
        install_stop_handlers()  # RQ's handlers stay behind its run: ours between runs
        try:
            waiting(redis.ping)
        except RetryError:
            return
        worker = cls(
            [Queue(name, connection=redis, job_class=TimedJob) for name in queue_names],
            connection=redis,
            job_class=TimedJob,  # every job timed into matcha_job_seconds
            # RQ restarts a scheduler that died (with its broker) at its maintenance:
            # every minute instead of every ten, so scheduled retries resume soon.
            maintenance_interval=MAINTENANCE_S,
        )
        on_start()
        log.info("RQ worker %s on %s", worker.name, ", ".join(queue_names))
        try:
            worker.work(
                burst=burst,
                with_scheduler=with_scheduler,
                logging_level="INFO",
                dequeue_strategy="round_robin",  # type: ignore[arg-type]
            )
        except SystemExit:  # a cold shutdown (the stop's second signal)
            _end_horse(worker)
            _requeue(worker.interrupted or _current(worker), redis)
            return
        except Exception:  # RQ's teardown itself may fail on a broker that went away
            log.warning("RQ worker %s stopped on an error", worker.name, exc_info=True)
        install_stop_handlers()
        if burst and worker.interrupted is None:
            return
        if stop.is_set():
            return
        # RQ gave up (the broker went away mid-job): end what it left, wait, work again.
        _end_horse(worker)
        with contextlib.suppress(RetryError):
            waiting(redis.ping)
        _requeue(worker.interrupted, redis)
        if burst:
            return
        log.warning("RQ worker %s lost its broker; working again", worker.name)


def _pause(seconds: float) -> None:
    process_stop.event.wait(seconds)


def _current(worker: Worker | SimpleWorker) -> Job | None:
    with contextlib.suppress(Exception):
        job: Job | None = worker.get_current_job()
        return job
    return None


def _log_wait(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    if state.attempt_number == 1 or wait >= 5.0:
        log.warning("Redis unreachable (%s); the RQ worker tries again in %.1f s", error, wait)


def on_signal(signum: int, frame: FrameType | None) -> None:
    """The stop handler while RQ's own is not installed (before and between its runs)."""
    if process_stop.request(signal.Signals(signum).name):
        _cut_short_after(JOB_GRACE_S)


def install_stop_handlers() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)


__all__ = [
    "JOB_GRACE_S",
    "DyingScheduler",
    "ForkingWorker",
    "InProcessWorker",
    "die_with_parent",
    "free_locks_of_dead_schedulers",
    "install_stop_handlers",
    "redis_connection",
    "serve",
]
