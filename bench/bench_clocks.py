"""Clocks: 10,000 running real-time clocks run out; how late is each time-out, and
what does sweeping cost?

Setup: ``MATCHES`` timed matches (real-time, base 60-90 s: every deadline is
still ahead once all are started) are started and both seats move once, so
every match has a main clock running with its deadline in the
``match_deadlines`` table (written with the appends). Then
two sweepers (``workers.clocks.Sweeper``, the one a ``matcha worker`` runs,
here in this process with a pool each) sleep until the earliest deadline,
claim what is due (``FOR UPDATE SKIP LOCKED``) and time each seat out
through the match core, signed appends included.

Figures (``bench/results/clocks.json``):

* ``timeout_lateness_p50_ms`` / ``_p99_ms``: from a clock's deadline to the
  commit of its time-out (goal p99 <= 1,000 ms);
* ``sweeper_cpu_s_per_min``: this process's CPU seconds while sweeping, per
  minute of sweeping (the work of two sweepers; PostgreSQL's own CPU not
  included);
* ``timeouts_appended``: must equal ``MATCHES`` (each exactly once).

``CLOCKS_BENCH_MATCHES`` makes a smaller run while developing.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench.bench_workers import throwaway_database
from bench.results_file import RESULTS_DIR, merge_results
from schemas.cards import Seat
from schemas.commands import Command, Pass
from schemas.rules import MatchTerms, RealTime
from service.matches import Folded, MatchCore, MatchFacts
from service.matches.core import MakeCommand
from service.store import EventStore
from service.store.db import open_pool
from workers.clocks import Sweeper

MATCHES = int(os.environ.get("CLOCKS_BENCH_MATCHES", "10000"))
CREATE_CONCURRENCY = 16
RESULTS: Path = RESULTS_DIR / "clocks.json"
TARGET_P99_MS = 1_000.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(q * len(ordered)) - 1)]


def _pass(seat: Seat) -> MakeCommand:
    def make(_f: MatchFacts, _s: Folded) -> Command:
        return Pass(seat=seat)

    return make


async def _bench(url: str) -> dict[str, Any]:
    pool = await open_pool(url, min_size=4, max_size=CREATE_CONCURRENCY + 4)
    core = MatchCore(EventStore(pool))
    rng = random.Random(13)
    limit = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def one(i: int) -> None:
        terms = MatchTerms(clock=RealTime(base_s=rng.randint(60, 90), no_show_s=180))
        async with limit:
            match = await core.start(
                players=(f"a{i}", f"b{i}"), ruleset="standard", ladder_id=None, terms=terms
            )
            for _ in range(2):  # both seats move once: their main clocks run
                folded = await core.current(match.match_id)
                seat = folded.state.to_move
                assert seat is not None
                await core.run(match.match_id, _pass(seat), actor="bench")

    began = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(MATCHES)))
    created_s = time.perf_counter() - began
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*), min(due_at), max(due_at) FROM match_deadlines")
        row = await cur.fetchone()
    assert row is not None and row[0] == MATCHES, row
    ahead = (row[1] - core.now()).total_seconds()
    print(
        f"   {MATCHES:,} clocks running ({created_s:.1f} s to start them);"
        f" deadlines over {(row[2] - row[1]).total_seconds():.1f} s, the first in {ahead:.1f} s"
    )
    if ahead < 0:  # the machine was too slow to start them all: lateness would count that
        print("   WARNING: some deadlines passed before the sweepers started")

    pools = [await open_pool(url, min_size=2, max_size=20) for _ in range(2)]
    sweepers = [Sweeper(MatchCore(EventStore(p)), p) for p in pools]
    stop = threading.Event()
    wake = [asyncio.Event(), asyncio.Event()]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    tasks = [asyncio.create_task(s.run(w, stop)) for s, w in zip(sweepers, wake, strict=True)]
    while sum(s.timed_out for s in sweepers) < MATCHES:
        await asyncio.sleep(0.5)  # the bench watching, not the sweepers' wake-up
        if time.perf_counter() - wall0 > 300:
            break
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stop.set()
    for w in wake:
        w.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM events WHERE type = 'match_ended' AND data->>'reason' = 'timeout'"
        )
        ended = await cur.fetchone()
    for p in [*pools, pool]:
        await p.close()
    lateness_ms = [1000 * s for sw in sweepers for s in sw.lateness_s]
    return {
        "clock_matches": MATCHES,
        "timeouts_appended": ended[0] if ended else 0,
        "timeout_lateness_p50_ms": round(statistics.median(lateness_ms), 1),
        "timeout_lateness_p99_ms": round(_pct(lateness_ms, 0.99), 1),
        "timeout_lateness_max_ms": round(max(lateness_ms), 1),
        "sweeper_cpu_s_per_min": round(cpu / wall * 60, 2),
        "sweeping_wall_s": round(wall, 1),
        "sweeps_by_sweeper": [s.timed_out for s in sweepers],
        "load_average_at_clocks": os.getloadavg()[0],
    }


def main() -> None:
    reduced = "" if MATCHES == 10_000 else "  (REDUCED size)"
    print(f"-- clocks: {MATCHES:,} real-time clocks run out, two sweepers{reduced}")
    with throwaway_database() as url:
        results = asyncio.run(_bench(url))
    p99 = results["timeout_lateness_p99_ms"]
    print(
        f"   time-outs {results['timeouts_appended']:,} (each once);"
        f" lateness p50 {results['timeout_lateness_p50_ms']:,.1f} ms,"
        f" p99 {p99:,.1f} ms (goal <= {TARGET_P99_MS:,.0f}:"
        f" {'ok' if p99 <= TARGET_P99_MS else 'MISSED'});"
        f" sweeper CPU {results['sweeper_cpu_s_per_min']:.2f} s per minute"
    )
    merge_results(RESULTS, results)
    print(f"   merged into {RESULTS}")


if __name__ == "__main__":
    main()
