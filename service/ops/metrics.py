"""Prometheus metrics, served at `/metrics` (prometheus-client).

What other parts call (all cheap, safe from any thread):

- `observe_command(kind, seconds, outcome)`: one match command handled; `kind` is the
  command's tag (`play`, `pass`, ...), `outcome` is `ok`, a rule error code, `conflict`...
- `events_appended.inc(n)`: events written by one append.
- `version_conflicts.inc()`: an append refused because the match moved on.
- `live_connections.inc()` / `.dec()`: open WebSocket/SSE streams (or `track_live_connection()`).
- `observe_job(job, seconds, outcome)` or `with time_job(job): ...`: one RQ job's run time
  (the `job_duration` histogram).

The RQ queue depth is not pushed by anyone: it is read from Redis when Prometheus scrapes.

Several processes: when PROMETHEUS_MULTIPROC_DIR is set (before the process starts),
prometheus-client writes every sample to files in that folder and `/metrics` sums
the files of every process on the machine: the uvicorn workers, and the RQ worker with
its forked job processes. `matcha run` does this. Without it each process reports only
its own numbers (fine for one uvicorn process per container, as in deploy/).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from service.broker.rq_cluster import connection as rq_connection
from service.store import matchlog
from service.store.ops import run

__all__ = [
    "CONTENT_TYPE_LATEST",
    "QueueDepthCollector",
    "command_seconds",
    "commands",
    "events_appended",
    "job_duration",
    "live_connections",
    "observe_command",
    "observe_job",
    "render",
    "time_job",
    "track_live_connection",
    "version_conflicts",
]

log = logging.getLogger("matcha.ops.metrics")

# A command is one transaction and a few folds: milliseconds, with a tail under load.
_COMMAND_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_JOB_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

commands = Counter(
    "matcha_commands", "Match commands handled, by command type and outcome.", ["kind", "outcome"]
)
command_seconds = Histogram(
    "matcha_command_seconds",
    "Time to handle one match command (load, decide, append).",
    ["kind"],
    buckets=_COMMAND_BUCKETS,
)
events_appended = Counter("matcha_events_appended", "Events appended to the events table.")
version_conflicts = Counter(
    "matcha_version_conflicts", "Appends refused because another command got there first."
)
live_connections = Gauge(
    "matcha_live_connections",
    "Open live streams (WebSocket and SSE).",
    multiprocess_mode="livesum",
)
job_duration = Histogram(
    "matcha_job_seconds",
    "Run time of one RQ job, by job and outcome.",
    ["job", "outcome"],
    buckets=_JOB_BUCKETS,
)


_command_children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
"""(kind, outcome) -> the two labelled children: ``labels()`` takes a lock and
builds its key on every call, and a command is observed on every request."""


def observe_command(kind: str, seconds: float, outcome: str = "ok") -> None:
    children = _command_children.get((kind, outcome))
    if children is None:
        children = (
            commands.labels(kind=kind, outcome=outcome),
            command_seconds.labels(kind=kind),
        )
        if len(_command_children) < 1_000:  # outcomes are rule codes: a small set
            _command_children[(kind, outcome)] = children
    children[0].inc()
    children[1].observe(seconds)


def observe_job(job: str, seconds: float, outcome: str = "ok") -> None:
    job_duration.labels(job=job, outcome=outcome).observe(seconds)


@contextmanager
def time_job(job: str) -> Iterator[None]:
    """Time the body as one run of `job`; an exception counts as outcome `failed`."""
    started = time.perf_counter()
    outcome = "failed"
    try:
        yield
        outcome = "ok"
    finally:
        observe_job(job, time.perf_counter() - started, outcome)


@contextmanager
def track_live_connection() -> Iterator[None]:
    live_connections.inc()
    try:
        yield
    finally:
        live_connections.dec()


class QueueDepthCollector(Collector):
    """`matcha_queue_depth{queue}`: jobs waiting in each RQ queue, read at scrape time."""

    def __init__(self, redis_url: str, prefix: str = "", timeout_s: float = 0.5) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        self.timeout_s = timeout_s

    def collect(self) -> Iterable[GaugeMetricFamily]:
        depth = GaugeMetricFamily(
            "matcha_queue_depth",
            "Jobs waiting in each RQ queue of this deployment.",
            labels=["queue"],
        )
        up = GaugeMetricFamily("matcha_queue_redis_up", "1 when Redis answered this scrape.")
        if not self.redis_url:
            return
        try:
            for name, count in self._depths():
                depth.add_metric([name], count)
            up.add_metric([], 1)
        except Exception as exc:  # a scrape must never fail because Redis is down
            log.warning("queue depth unavailable: %s", exc)
            up.add_metric([], 0)
        yield depth
        yield up

    def _depths(self) -> list[tuple[str, int]]:
        from rq import Queue

        # RQ's own connection: on a redis+cluster:// URL the master of RQ's slot
        # (Redis.from_url refuses that scheme, and the queues would read as down).
        conn = rq_connection(
            self.redis_url, socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s
        )
        try:
            queues = Queue.all(connection=conn)
            # service.broker.jobs names them `<prefix>-ratings`, `<prefix>-replays`
            mine = [q for q in queues if not self.prefix or q.name.startswith(f"{self.prefix}-")]
            return sorted((q.name, q.count) for q in mine)
        finally:
            conn.close()


class ProjectionLagCollector(Collector):
    """`matcha_projection_lag_positions{projection}`: how far each projection runner
    of the workers is behind the end of the log (global positions between the last
    one handed out and the last one it applied), read from PostgreSQL at scrape time.
    It stays near 0 while the workers keep up; growing, it says they do not (or
    that none runs)."""

    def __init__(self, database_url: str, timeout_s: float = 1.0) -> None:
        self.database_url = database_url
        self.timeout_s = timeout_s

    def collect(self) -> Iterable[GaugeMetricFamily]:
        if not self.database_url:
            return
        lag = GaugeMetricFamily(
            "matcha_projection_lag_positions",
            "Log positions the projection runner has not applied yet.",
            labels=["projection"],
        )
        try:
            for name, behind in self._lags():
                lag.add_metric([name], behind)
        except Exception as exc:  # a scrape must never fail because the database is away
            log.warning("projection lag unavailable: %s", exc)
            return
        yield lag

    def _lags(self) -> list[tuple[str, int]]:
        import psycopg

        with psycopg.connect(
            self.database_url, autocommit=True, connect_timeout=max(1, int(self.timeout_s))
        ) as conn:
            last = run(conn, matchlog.last_position())
            rows = conn.execute(
                "SELECT name, position FROM projection_positions ORDER BY name"
            ).fetchall()
        return [(str(name), max(0, last - int(position))) for name, position in rows]


def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def render(extra: Iterable[Collector] = ()) -> bytes:
    """The text exposition of every metric of this process (or of all, in multiprocess mode)."""
    if multiprocess_dir():
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    for collector in extra:
        body += generate_latest(collector)  # anything with collect() will do
    return body


def serve_worker_metrics(port: int) -> None:
    """Expose this process's metrics on `port` (for a worker outside `matcha run`)."""
    from prometheus_client import start_http_server

    if multiprocess_dir():
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        start_http_server(port, registry=registry)
    else:
        start_http_server(port)
