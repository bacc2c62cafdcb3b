"""/metrics: what the parts record, the queue depth read at scrape time, and several processes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis
from rq import Queue

from schemas.events import MatchCreated, MatchEnded
from schemas.rules import STANDARD
from service.embedded import free_port
from service.ops import metrics
from service.store import EventStore

from .ops_harness import ops_app


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(text: str, name: str, **labels: str) -> float:
    return _samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


async def _scrape(app_args: tuple[str, str, str]) -> str:
    async with AsyncTestClient(ops_app(*app_args)) as client:
        response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["content-type"].count("charset") == 1
    return response.text


@pytest.mark.anyio
async def test_commands_appends_conflicts_and_jobs_show_up_on_the_next_scrape(
    pg_server_url: str, redis_server_url: str, redis_prefix: str
) -> None:
    args = (pg_server_url, redis_server_url, redis_prefix)
    before = await _scrape(args)
    metrics.observe_command("play", 0.004, "ok")
    metrics.observe_command("play", 0.300, "ok")
    metrics.observe_command("pass", 0.002, "not_your_turn")
    metrics.events_appended.inc(3)
    metrics.version_conflicts.inc()
    with metrics.track_live_connection():
        during = await _scrape(args)
    with pytest.raises(ZeroDivisionError), metrics.time_job("ratings"):
        1 / 0  # noqa: B018  # a failing job is timed too
    after = await _scrape(args)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("matcha_commands_total", kind="play", outcome="ok") == 2
    assert grew("matcha_commands_total", kind="pass", outcome="not_your_turn") == 1
    assert grew("matcha_command_seconds_count", kind="play") == 2
    assert grew("matcha_command_seconds_sum", kind="play") == pytest.approx(0.304)
    # 0.004 s falls in the 5 ms bucket, 0.3 s only from the 0.5 s bucket up
    assert grew("matcha_command_seconds_bucket", kind="play", le="0.005") == 1
    assert grew("matcha_command_seconds_bucket", kind="play", le="0.5") == 2
    assert grew("matcha_events_appended_total") == 3
    assert grew("matcha_version_conflicts_total") == 1
    assert _value(during, "matcha_live_connections") - _value(after, "matcha_live_connections") == 1
    assert grew("matcha_job_seconds_count", job="ratings", outcome="failed") == 1


@pytest.mark.anyio
async def test_queue_depth_is_read_from_redis_for_this_prefix_only(
    pg_server_url: str, redis_server_url: str, redis_prefix: str
) -> None:
    conn = Redis.from_url(redis_server_url)
    mine = Queue(f"{redis_prefix}-ratings", connection=conn)
    other = Queue(f"{redis_prefix}x-ratings", connection=conn)  # another tenant's prefix
    try:
        for _ in range(3):
            mine.enqueue("builtins.print", "tea")
        other.enqueue("builtins.print", "not ours")
        text = await _scrape((pg_server_url, redis_server_url, redis_prefix))
        assert _value(text, "matcha_queue_depth", queue=f"{redis_prefix}-ratings") == 3
        assert all(
            not labels or dict(labels).get("queue", "").startswith(f"{redis_prefix}-")
            for (name, labels) in _samples(text)
            if name == "matcha_queue_depth"
        )
        mine.empty()
        text = await _scrape((pg_server_url, redis_server_url, redis_prefix))
        assert _value(text, "matcha_queue_depth", queue=f"{redis_prefix}-ratings") == 0
        assert _value(text, "matcha_queue_redis_up") == 1
    finally:
        for queue in (mine, other):
            queue.delete(delete_jobs=True)
        conn.close()


async def _two_events(store: EventStore, match_id: str) -> int:
    """A match created and ended at once: two events at the end of the log."""
    seed = hashlib.sha256(match_id.encode()).hexdigest()
    created = MatchCreated(
        match_id=match_id,
        players=("p0", "p1"),
        ruleset=STANDARD,
        first_dealer=0,
        seed_commitment=hashlib.sha256(bytes.fromhex(seed)).hexdigest(),
    )
    await store.append(match_id, 0, [created], actor="system")
    await store.append(
        match_id, 1, [MatchEnded(winner=0, reason="resigned", seed=seed)], actor="system"
    )
    return 2


@pytest.mark.anyio
async def test_each_projection_runner_shows_how_far_behind_the_log_it_is(
    database_url: str, redis_server_url: str, redis_prefix: str, store: EventStore
) -> None:
    from workers.projections import catch_up_all

    text = await _scrape((database_url, redis_server_url, redis_prefix))
    assert {
        dict(labels)["projection"]
        for (name, labels) in _samples(text)
        if name == "matcha_projection_lag_positions"
    } == {"archives", "flags", "odds", "ratings", "summaries"}
    assert _value(text, "matcha_projection_lag_positions", projection="archives") == 0
    events = await _two_events(store, "lag-1")
    text = await _scrape((database_url, redis_server_url, redis_prefix))
    assert _value(text, "matcha_projection_lag_positions", projection="archives") == events
    catch_up_all(database_url)  # what a worker does within a poll
    text = await _scrape((database_url, redis_server_url, redis_prefix))
    assert _value(text, "matcha_projection_lag_positions", projection="archives") == 0


@pytest.mark.anyio
async def test_a_scrape_still_answers_while_redis_is_down(pg_server_url: str) -> None:
    text = await _scrape((pg_server_url, f"redis://127.0.0.1:{free_port()}/0", "p"))
    assert _value(text, "matcha_queue_redis_up") == 0
    assert "matcha_commands_total" in text or "matcha_commands" in text


_OBSERVE = """
from service.ops import metrics
from service.store import EventStore
metrics.observe_job("replay", 0.2)
metrics.observe_command("play", 0.01)
"""


def test_several_processes_are_summed_in_multiprocess_mode(tmp_path: Path) -> None:
    """What `matcha run` relies on: a job timed in the worker shows on the API's /metrics."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):  # two short-lived processes (RQ forks one per job)
        subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_OBSERVE)], env=env, check=True, timeout=60
        )
    render = "import sys\nfrom service.ops.metrics import render\nsys.stdout.buffer.write(render())"
    text = subprocess.run(
        [sys.executable, "-c", render],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert _value(text, "matcha_job_seconds_count", job="replay", outcome="ok") == 2
    assert _value(text, "matcha_job_seconds_sum", job="replay", outcome="ok") == pytest.approx(0.4)
    assert _value(text, "matcha_commands_total", kind="play", outcome="ok") == 2


def _double(n: int) -> int:
    return n * 2


def _fail() -> None:
    raise RuntimeError("a failing job")


def test_rq_jobs_run_with_timed_job_are_observed_by_name_and_outcome(
    redis_server_url: str, redis_prefix: str
) -> None:
    from rq import SimpleWorker

    from service.ops.jobs import TimedJob

    conn = Redis.from_url(redis_server_url)
    queue = Queue(f"{redis_prefix}-jobs", connection=conn, job_class=TimedJob)
    before = metrics.render().decode()
    try:
        done = queue.enqueue(_double, 21)
        queue.enqueue(_fail)
        SimpleWorker([queue], connection=conn, job_class=TimedJob).work(burst=True)
        assert done.latest_result() is not None and done.latest_result().return_value == 42
    finally:
        queue.delete(delete_jobs=True)
        conn.close()
    after = metrics.render().decode()

    def grew(job: str, outcome: str) -> float:
        labels = {"job": job, "outcome": outcome}
        name = "matcha_job_seconds_count"
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("_double", "ok") == 1
    assert grew("_fail", "failed") == 1
