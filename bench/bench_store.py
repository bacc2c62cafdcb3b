"""append_ratio: EventStore.append against a raw psycopg INSERT + COMMIT loop.

Both sides run CONCURRENCY asyncio tasks, each on its own match and its own
connection, appending EVENTS_PER_APPEND events per transaction for SECONDS
seconds, in a throwaway database on the server at $MATCHA_BENCH_DATABASE_URL
(default: postgresql://postgres@127.0.0.1:5432/postgres, needs CREATE DATABASE).
The raw side inserts the same rows (same JSON, same table shape and unique
index, hashes precomputed) into a table without triggers: it is the price of
a commit, nothing else. Writes bench/results/store.json.

    .venv/bin/python -m bench.bench_store
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from bench.results_file import merge_results
from schemas.events import CardPlayed, Event, Passed, encode_event
from service.store.db import open_pool, scratch_database, with_database
from service.store.events import EventStore
from service.store.migrate import apply_migrations

CONCURRENCY = 8
EVENTS_PER_APPEND = 3
SECONDS = float(os.environ.get("MATCHA_BENCH_SECONDS", "3"))
ROUNDS = int(os.environ.get("MATCHA_BENCH_ROUNDS", "3"))
"""The sides take turns ROUNDS times and each reports its median: the machine is shared."""
RESULTS = Path(__file__).parent / "results" / "store.json"

RAW_TABLE = """
CREATE TABLE raw_events (
    position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    match_id text NOT NULL, version integer NOT NULL, type text NOT NULL,
    data jsonb NOT NULL, actor text NOT NULL, recorded_at timestamptz NOT NULL,
    prev_hash bytea NOT NULL, hash bytea NOT NULL,
    UNIQUE (match_id, version)
)
"""
RAW_INSERT = (
    "INSERT INTO raw_events (match_id, version, type, data, actor, recorded_at, prev_hash, hash)"
    " VALUES " + ", ".join(["(%s, %s, %s, %s::jsonb, %s, %s, %s, %s)"] * EVENTS_PER_APPEND)
)


def _command_events() -> list[Event]:
    events: list[Event] = [
        CardPlayed(seat=0, hand=1, round=1, card="M3", target="number"),
        Passed(seat=1, hand=1, round=1),
        CardPlayed(seat=0, hand=1, round=2, card="C1", target="suit"),
    ]
    return events[:EVENTS_PER_APPEND]


async def _timed(worker: Callable[[int, Callable[[], bool]], Awaitable[int]]) -> float:
    """Appends per second of CONCURRENCY workers running for SECONDS."""
    deadline = time.perf_counter() + SECONDS
    started = time.perf_counter()
    counts = await asyncio.gather(
        *(worker(n, lambda: time.perf_counter() < deadline) for n in range(CONCURRENCY))
    )
    return sum(counts) / (time.perf_counter() - started)


async def _store_rate(url: str, *, warm_cache: bool) -> float:
    pool = await open_pool(url, min_size=CONCURRENCY, max_size=CONCURRENCY)
    store = EventStore(pool)
    events = _command_events()
    run = uuid.uuid4().hex[:6]

    async def worker(n: int, running: Callable[[], bool]) -> int:
        match_id = f"bench-{run}-{warm_cache}-{n}"
        version, appended = 0, 0
        while running():
            if not warm_cache:
                store._heads.clear()  # every append reads the previous hash first
            result = await store.append(match_id, version, events, actor="bench")
            version = result.last_version
            appended += 1
        return appended

    try:
        return await _timed(worker)
    finally:
        await pool.close()


async def _raw_rate(url: str) -> float:
    data = [encode_event(e).decode() for e in _command_events()]
    types = [type(e).__struct_config__.tag for e in _command_events()]
    run = uuid.uuid4().hex[:6]

    async def worker(n: int, running: Callable[[], bool]) -> int:
        match_id = f"raw-{run}-{n}"
        version, appended = 0, 0
        async with await psycopg.AsyncConnection.connect(url) as conn:
            while running():
                now = datetime.now(UTC)
                params: list[object] = []
                for i in range(EVENTS_PER_APPEND):
                    params += [match_id, version + i + 1, types[i], data[i], "bench", now,
                               bytes(32), bytes(32)]  # fmt: skip
                await conn.execute(RAW_INSERT, params)
                await conn.commit()
                version += EVENTS_PER_APPEND
                appended += 1
        return appended

    return await _timed(worker)


async def _run(server_url: str) -> dict[str, object]:
    with scratch_database(server_url, "bench_store_") as name:
        url = with_database(server_url, name)
        apply_migrations(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(RAW_TABLE)
        raws, stores, colds = [], [], []
        for _ in range(ROUNDS):
            raws.append(await _raw_rate(url))
            stores.append(await _store_rate(url, warm_cache=True))
            colds.append(await _store_rate(url, warm_cache=False))
        raw, store, cold = (statistics.median(x) for x in (raws, stores, colds))
    return {
        "concurrency": CONCURRENCY,
        "events_per_append": EVENTS_PER_APPEND,
        "seconds_per_side": SECONDS,
        "rounds": ROUNDS,
        "raw_appends_per_s": round(raw, 1),
        "store_appends_per_s": round(store, 1),
        "store_cold_appends_per_s": round(cold, 1),
        "append_ratio": round(store / raw, 3),
        "append_ratio_cold": round(cold / raw, 3),
        "goal_append_ratio": 0.5,
        "machine": f"{platform.machine()}, {os.cpu_count()} cpu",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main() -> dict[str, object]:
    server_url = os.environ.get(
        "MATCHA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    result = asyncio.run(_run(server_url))
    print(f"event store appends: {CONCURRENCY} matches at once, {EVENTS_PER_APPEND} events each")
    print(f"{'':34}{'appends/s':>12}{'events/s':>12}")
    for label, key in (
        ("raw psycopg INSERT + COMMIT", "raw_appends_per_s"),
        ("EventStore.append", "store_appends_per_s"),
        ("EventStore.append, cold cache", "store_cold_appends_per_s"),
    ):
        rate = float(result[key])  # type: ignore[arg-type]
        print(f"{label:34}{rate:12.0f}{rate * EVENTS_PER_APPEND:12.0f}")
    print(f"append_ratio {result['append_ratio']} (goal >= 0.5);"
          f" with a cold cache {result['append_ratio_cold']}")  # fmt: skip
    merge_results(RESULTS, result)
    return result


if __name__ == "__main__":
    main()
