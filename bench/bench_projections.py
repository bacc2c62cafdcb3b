"""Projection lag: from a match's end to its archive and its rating, both visible.

``LAG_MATCHES`` (default 200) self-played matches on 4 ladders are written up to
their last event; a real ``matcha worker`` subprocess follows the log; then
all of them end at once (their ``match_ended`` appended together through the
event store, each followed by the hint the API's after-commit hook sends). For
each match: the time from its append's commit to the moment its replay archive
is stored *and* its ladder's ratings include it (polled every 10 ms), p50 and
p99. Writes ``projection_lag_p50_ms`` / ``projection_lag_p99_ms`` (goal: p99
<= 2,000 ms) into bench/results/workers.json.

    .venv/bin/python -m bench.bench_projections   (MATCHA_BENCH_LAG_MATCHES=50 for a quick run)
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench.bench_workers import REDIS_URL, _python_loop_ns, one_row, throwaway_database
from bench.results_file import merge_results

LAG_MATCHES = int(os.environ.get("MATCHA_BENCH_LAG_MATCHES", "200"))
LADDERS = 4
RESULTS = Path(__file__).parent / "results" / "workers.json"
TARGET_P99_MS = 2_000.0


def _write_almost_finished(url: str, count: int) -> dict[str, tuple[str, Any, Any]]:
    """Matches written up to (not including) their match_ended:
    id -> (ladder, that event, the match's summary after it)."""
    from msgspec.structs import replace

    from schemas.rules import DUEL, STANDARD
    from service.bots import heuristic_bot, random_bot
    from service.engine.selfplay import play_match
    from service.matches.summaries import summarise, upsert_statement
    from service.store.bulk import EVENTS_COPY, copy_log

    rng = random.Random(23)
    ladders = [f"lag-{k}" for k in range(LADDERS)]
    players = [f"lag-p{i}" for i in range(40)]
    last: dict[str, tuple[str, Any, Any]] = {}
    playing: list[Any] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO players (id, name, token_hash) VALUES ('lag-org', 'lag-org', %s)",
            (hashlib.sha256(b"lag-org").digest(),),
        )
        for name in players:
            conn.execute(
                "INSERT INTO players (id, name, token_hash) VALUES (%s, %s, %s)",
                (name, name.upper(), hashlib.sha256(name.encode()).digest()),
            )
        for ladder in ladders:
            conn.execute(
                "INSERT INTO ladders (id, name, ruleset, rating, created_by)"
                " VALUES (%s, %s, 'standard', '{}', 'lag-org')",
                (ladder, ladder),
            )
        start = datetime.now(UTC) - timedelta(hours=1)
        with (
            conn.cursor() as cur,
            cur.copy(EVENTS_COPY) as copy,
        ):
            for i in range(count):
                match_id = f"lag-m{i}"
                _, log = play_match(
                    (random_bot, heuristic_bot), STANDARD if i % 2 else DUEL, rng, match_id=match_id
                )
                ladder = ladders[i % LADDERS]
                a, b = rng.sample(players, 2)
                log[0] = replace(log[0], players=(a, b), ladder_id=ladder)
                times = (start + timedelta(milliseconds=i * 10 + v) for v in range(1, len(log)))
                copy_log(copy, match_id, log[:-1], times)
                last[match_id] = (ladder, log[-1], summarise(log))
                playing.append(summarise(log[:-1]))
        # As the API keeps them: each match's summary up to date with its events.
        for summary in playing:
            conn.execute(*upsert_statement(summary))
        conn.execute("ANALYZE")
    return last


async def _end_all(url: str, prefix: str, last: dict[str, tuple[str, Any, Any]]) -> dict[str, Any]:
    """Append every match_ended at once, as the API does (the summary in the same
    statement, then the hint); each match's (position, commit time)."""
    from redis.asyncio import Redis

    from service.broker.wake import hint
    from service.matches.summaries import upsert_statement
    from service.store import EventStore, open_pool

    pool = await open_pool(url, min_size=4, max_size=20)
    redis = Redis.from_url(REDIS_URL)
    store = EventStore(pool)
    versions: dict[str, int] = {}
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT match_id, max(version) FROM events GROUP BY 1")
        versions = dict(await cur.fetchall())
    committed: dict[str, tuple[int, float]] = {}

    async def end(match_id: str) -> None:
        _, event, summary = last[match_id]
        result = await store.append(
            match_id, versions[match_id], [event], actor="system", also=[upsert_statement(summary)]
        )
        committed[match_id] = (result.positions[-1], time.perf_counter())
        await hint(redis, prefix, match_id)  # what the API's after-commit hook sends

    try:
        await asyncio.gather(*(end(m) for m in last))
    finally:
        await redis.aclose()
        await pool.close()
    return committed


def _watch(
    url: str,
    last: dict[str, tuple[str, Any, Any]],
    committed: dict[str, tuple[int, float]],
    timeout_s: float = 120,
) -> dict[str, float]:
    """Seconds from each commit to its archive and its rating both being visible."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(url, autocommit=True) as conn:
        while len(seen) < len(committed):
            assert time.monotonic() < deadline, f"only {len(seen)} of {len(committed)} visible"
            archived = {
                m
                for (m,) in conn.execute(
                    "SELECT match_id FROM replay_archives WHERE built_at_position > 0"
                ).fetchall()
            }
            rated: dict[str, int] = dict(
                conn.execute("SELECT ladder_id, position FROM ladder_projections").fetchall()
            )
            now = time.perf_counter()
            for match_id, (position, at) in committed.items():
                ladder = last[match_id][0]
                if (
                    match_id not in seen
                    and match_id in archived
                    and rated.get(ladder, 0) >= position
                ):
                    seen[match_id] = now - at
            time.sleep(0.01)
    return seen


def bench_lag(url: str) -> dict[str, Any]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    last = _write_almost_finished(url, LAG_MATCHES)
    worker_log = open(os.environ.get("MATCHA_BENCH_WORKER_LOG", os.devnull), "wb")  # noqa: SIM115
    worker = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "worker", "--no-catch-up"],
        env={
            **os.environ,
            "DATABASE_URL": url,
            "REDIS_URL": REDIS_URL,
            "MATCHA_REDIS_PREFIX": prefix,
            "MATCHA_LOG_LEVEL": os.environ.get("MATCHA_BENCH_WORKER_LOG_LEVEL", "WARNING"),
        },
        stdout=subprocess.DEVNULL,
        stderr=worker_log,
    )
    try:
        # The worker is up and has read the log so far (nothing ended yet: nothing to do).
        with psycopg.connect(url, autocommit=True) as conn:
            head = one_row(conn, "SELECT max(position) FROM events")[0]
            deadline = time.monotonic() + 60
            while (
                one_row(
                    conn, "SELECT min(position) FROM projection_positions WHERE name <> 'summaries'"
                )[0]
                < head
            ):
                assert worker.poll() is None and time.monotonic() < deadline, "no worker"
                time.sleep(0.05)
        time.sleep(1.0)  # its hint subscription is up
        committed = asyncio.run(_end_all(url, prefix, last))
        lags = sorted(_watch(url, last, committed).values())
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        worker_log.close()
    ms = [s * 1000 for s in lags]
    return {
        "projection_lag_p50_ms": statistics.median(ms),
        "projection_lag_p99_ms": ms[max(0, round(0.99 * len(ms)) - 1)],
        "projection_lag_max_ms": ms[-1],
        "projection_lag_matches": len(ms),
        "projection_lag_ladders": LADDERS,
    }


def main() -> None:
    print(
        f"-- projection lag: {LAG_MATCHES} matches end at once on {LADDERS} ladders,"
        " worker subprocess"
    )
    with throwaway_database() as url:
        results = {"python_loop_ns_at_projection_lag": _python_loop_ns(), **bench_lag(url)}
    results["load_average_at_projection_lag"] = os.getloadavg()[0]
    p99 = results["projection_lag_p99_ms"]
    print(
        f"   p50 {results['projection_lag_p50_ms']:,.0f} ms, p99 {p99:,.0f} ms"
        f" (goal <= {TARGET_P99_MS:,.0f}: {'ok' if p99 <= TARGET_P99_MS else 'MISSED'}),"
        f" max {results['projection_lag_max_ms']:,.0f} ms"
    )
    merge_results(RESULTS, results)
    print(f"   merged into {RESULTS}")


if __name__ == "__main__":
    main()
