"""The Glicko-2 recompute's speed: ``glicko2_recompute_matches_per_s``.

A ladder of 10,000 players and 1,000,000 finished matches (the Elo bench's
synthetic load, bench_workers.py, on a ladder whose rating system is
Glicko-2), recomputed from PostgreSQL end to end with ``apply_ladder(...,
full=True)``: read the log, rate period by period, write the tables, commit.
The matches end over ``MATCHA_BENCH_GLICKO_PERIODS`` (14) daily rating
periods, about 14 games per player per period (Glickman suggests 10 to 15).
Smaller: ``MATCHA_BENCH_GLICKO_MATCHES`` / ``MATCHA_BENCH_GLICKO_PLAYERS``.
Then the same recompute with the ladder switched to Elo, under the same load
(``glicko2_paired_elo_*``): the machine is shared, and the pair compares the
two systems where neither figure alone can. Merges its figures into
bench/results/workers.json.

    .venv/bin/python -m bench glicko2
"""

from __future__ import annotations

import os
import time
from typing import Any

import psycopg

from bench.bench_workers import (
    RESULTS,
    _backend_cpu_s,
    _load_synthetic,
    _python_loop_ns,
    _seed_ladder,
    throwaway_database,
)
from bench.results_file import merge_results

MATCHES = int(os.environ.get("MATCHA_BENCH_GLICKO_MATCHES", "1000000"))
PLAYERS = int(os.environ.get("MATCHA_BENCH_GLICKO_PLAYERS", "10000"))
PERIODS = int(os.environ.get("MATCHA_BENCH_GLICKO_PERIODS", "14"))
TARGET = 200_000


def bench_glicko2(url: str) -> dict[str, Any]:
    from workers.ratings import apply_ladder

    day_s = 86_400
    with psycopg.connect(url, autocommit=True) as conn:
        _seed_ladder(conn, "glicko2", rating='{"system": "glicko2"}')
        # match i ends in period (i - 1) * PERIODS // MATCHES of a day each
        at = (
            f"timestamptz '2026-01-01 00:00:00+00' + ((i - 1)::float8 * {PERIODS * day_s}"
            f" / {MATCHES}) * interval '1 second'"
        )
        load_s = _load_synthetic(conn, MATCHES, PLAYERS, ladder="glicko2", recorded_at=at)
        print(
            f"   loaded {MATCHES:,} synthetic matches of {PLAYERS:,} players over"
            f" {PERIODS} periods in {load_s:.1f} s"
        )
    with (
        psycopg.connect(url, autocommit=True) as conn,
        psycopg.connect(url, autocommit=True) as reader,
    ):
        phases: dict[str, float] = {}
        backends0 = [_backend_cpu_s(c) for c in (conn, reader)]
        t0, cpu0 = time.perf_counter(), time.process_time()

        def progress(phase: str, done: int, total: int) -> None:
            phases.setdefault(phase, time.perf_counter() - t0)

        result = apply_ladder(conn, "glicko2", full=True, reader=reader, progress=progress)
        elapsed = time.perf_counter() - t0
        cpu = {"python": time.process_time() - cpu0}
        backends = [_backend_cpu_s(c) for c in (conn, reader)]
        if None not in backends0 + backends:
            cpu["postgres"] = sum(backends) - sum(backends0)  # type: ignore[arg-type]
        periods = conn.execute(
            "SELECT count(DISTINCT p) FROM rating_histories, unnest(periods) AS p"
            " WHERE ladder_id = 'glicko2'"
        ).fetchone()
    assert result["matches"] == MATCHES, result
    elo = _paired_elo(url)
    return {
        "glicko2_paired_elo_recompute_matches_per_s": elo["matches_per_s"],
        "glicko2_paired_elo_recompute_cpu_s": elo["cpu_s"],
        "glicko2_recompute_matches_per_s": MATCHES / elapsed,
        "glicko2_recompute_s": elapsed,
        "glicko2_phases_s": {
            "read_ladder_matches": phases.get("rating", 0.0),
            "rate": phases.get("writing", 0.0) - phases.get("rating", 0.0),
            "write_and_commit": elapsed - phases.get("writing", 0.0),
        },
        "glicko2_recompute_cpu_s": cpu,
        "glicko2_matches": MATCHES,
        "glicko2_players": PLAYERS,
        "glicko2_periods": int(periods[0]) if periods else 0,
        "glicko2_synthetic_load_s": load_s,
    }


def _paired_elo(url: str) -> dict[str, Any]:
    """The same recompute with the ladder's rating system switched to Elo, right
    after: the Elo figure under the same load (the other helper's benchmarks
    share the cores), so the two systems compare even when neither runs idle."""
    from workers.ratings import apply_ladder

    with (
        psycopg.connect(url, autocommit=True) as conn,
        psycopg.connect(url, autocommit=True) as reader,
    ):
        conn.execute("UPDATE ladders SET rating = '{}' WHERE id = 'glicko2'")
        backends0 = [_backend_cpu_s(c) for c in (conn, reader)]
        t0, cpu0 = time.perf_counter(), time.process_time()
        result = apply_ladder(conn, "glicko2", full=True, reader=reader)
        elapsed = time.perf_counter() - t0
        cpu = {"python": time.process_time() - cpu0}
        backends = [_backend_cpu_s(c) for c in (conn, reader)]
        if None not in backends0 + backends:
            cpu["postgres"] = sum(backends) - sum(backends0)  # type: ignore[arg-type]
    assert result["matches"] == MATCHES, result
    return {"matches_per_s": MATCHES / elapsed, "cpu_s": cpu}


def main() -> None:
    print(
        f"-- Glicko-2 recompute: {MATCHES:,} matches, {PLAYERS:,} players"
        + ("" if MATCHES == 1_000_000 else "  (REDUCED size)")
    )
    with throwaway_database() as url:
        results: dict[str, Any] = {"python_loop_ns_at_glicko2": _python_loop_ns()}
        results |= bench_glicko2(url)
        results["glicko2_load_average"] = os.getloadavg()[0]
    rate = results["glicko2_recompute_matches_per_s"]
    phases = results["glicko2_phases_s"]
    cpu = results["glicko2_recompute_cpu_s"]
    print(
        f"   {rate:,.0f} matches/s ({results['glicko2_recompute_s']:.2f} s;"
        f" read {phases['read_ladder_matches']:.2f} / rate {phases['rate']:.2f} /"
        f" write {phases['write_and_commit']:.2f}; CPU {cpu['python']:.2f} s Python,"
        f" {cpu.get('postgres', float('nan')):.2f} s PostgreSQL)"
        f"  target >= {TARGET:,}: {'ok' if rate >= TARGET else 'MISSED'}"
    )
    elo_cpu = results["glicko2_paired_elo_recompute_cpu_s"]
    print(
        f"   Elo on the same ladder right after:"
        f" {results['glicko2_paired_elo_recompute_matches_per_s']:,.0f} matches/s"
        f" (CPU {elo_cpu['python']:.2f} s Python, {elo_cpu.get('postgres', float('nan')):.2f} s"
        " PostgreSQL)"
    )
    print(
        f"   (load average {os.getloadavg()[0]:.2f}; a bare Python loop step took"
        f" {results['python_loop_ns_at_glicko2']:.0f} ns, ~30 on an idle core)"
    )
    merge_results(
        RESULTS, results | {"glicko2_targets": {"glicko2_recompute_matches_per_s": f">= {TARGET}"}}
    )


if __name__ == "__main__":
    main()
