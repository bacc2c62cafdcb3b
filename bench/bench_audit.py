"""audits_per_s: how fast an organiser can audit a season before publishing it.

Self-play matches (``service.engine.selfplay``, heuristic bots, the standard
ruleset) are appended through ``EventStore`` into a throwaway database of the
server at $MATCHA_BENCH_DATABASE_URL (default
postgresql://postgres@127.0.0.1:5432/postgres, needs CREATE DATABASE); then

* ``pure``: ``build_report`` on rows already in memory (chain, re-fold,
  fairness, timing: the CPU cost of the checks alone);
* ``store``: ``audit_match`` of every match, one after another over one
  connection, as ``matcha audit --all`` does (SQL reads included).

Prints a table and writes bench/results/audit.json.

    .venv/bin/python -m bench audit
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import time
from pathlib import Path
from typing import Any

import psycopg

from bench.results_file import merge_results
from schemas.events import Event, MatchEnded
from schemas.rules import STANDARD
from service.audit.audit import audit_match, build_report
from service.audit.refold import command_for
from service.audit.rows import match_rows
from service.bots import heuristic_bot
from service.engine.selfplay import play_match
from service.store import EventStore, apply_migrations, open_pool
from service.store.db import scratch_database, with_database

SERVER = os.environ.get(
    "MATCHA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
MATCHES = int(os.environ.get("MATCHA_BENCH_AUDIT_MATCHES", "400"))
RESULTS = Path(__file__).parent / "results" / "audit.json"


def _batches(events: list[Event]) -> list[tuple[str, list[Event]]]:
    """The appends the service would have made: one per command, as its player."""
    batches: list[tuple[str, list[Event]]] = [("system", [])]
    for event in events:
        command = command_for(event)
        if command is not None:
            batches.append((f"p{command.seat}", []))
        batches[-1][1].append(event)
    return batches


async def _fill(url: str) -> int:
    pool = await open_pool(url, min_size=1, max_size=4)
    store = EventStore(pool)
    rng = random.Random(2026)
    events_total = 0
    try:
        for n in range(MATCHES):
            match_id = f"bench-{n}"
            _, events = play_match((heuristic_bot, heuristic_bot), STANDARD, rng, match_id)
            ended = events[-1]
            assert isinstance(ended, MatchEnded)
            version = 0
            for actor, batch in _batches(events):
                result = await store.append(
                    match_id, version, batch, actor=actor, seed=ended.seed if not version else None
                )
                version = result.last_version
            events_total += len(events)
    finally:
        await pool.close()
    return events_total


async def _measure(url: str) -> dict[str, Any]:
    events_total = await _fill(url)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        ids = [f"bench-{n}" for n in range(MATCHES)]
        rows = {m: await match_rows(conn, m) for m in ids}

        started = time.perf_counter()
        for match_id in ids:
            report = build_report(match_id, rows[match_id])
            assert report.verdict.consistent, report.verdict.line
        pure_s = time.perf_counter() - started

        started = time.perf_counter()
        for match_id in ids:
            report = await audit_match(conn, match_id)
            assert report.verdict.consistent, report.verdict.line
        store_s = time.perf_counter() - started
    return {
        "matches": MATCHES,
        "events": events_total,
        "events_per_match": events_total / MATCHES,
        "pure_audits_per_s": MATCHES / pure_s,
        "pure_ms_per_match": 1000 * pure_s / MATCHES,
        "store_audits_per_s": MATCHES / store_s,
        "store_ms_per_match": 1000 * store_s / MATCHES,
    }


def main() -> None:
    with scratch_database(SERVER, "bench_audit_") as name:
        url = with_database(SERVER, name)
        apply_migrations(url)
        result = asyncio.run(_measure(url))
    result["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    print(f"{'audit of one match':<36}{'matches/s':>12}{'ms/match':>12}")
    print(
        f"{'pure (rows in memory)':<36}{result['pure_audits_per_s']:>12.0f}"
        f"{result['pure_ms_per_match']:>12.2f}"
    )
    print(
        f"{'store (SQL read + checks)':<36}{result['store_audits_per_s']:>12.0f}"
        f"{result['store_ms_per_match']:>12.2f}"
    )
    print(f"{result['matches']} matches, {result['events_per_match']:.1f} events each")
    merge_results(RESULTS, result)


if __name__ == "__main__":
    main()
