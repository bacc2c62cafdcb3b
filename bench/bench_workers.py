"""The workers' targets: Elo recompute speed, rating visibility, archive builds.

* ``elo_recompute_matches_per_s``: a ladder of 10,000 players and 1,000,000
  finished matches recomputed from PostgreSQL end to end (``apply_ladder(...,
  full=True)``: read the log, rate, write the tables, commit). The matches are
  *synthetic*: only the two events the ratings read (match_created with the
  ladder and players, match_ended with the winner) are inserted, straight into
  the events table with SQL ``generate_series`` (as superuser; the hashes are
  placeholders, not a valid chain; the table's secondary indexes are dropped
  during the load and rebuilt from their own definitions after). Smaller:
  ``MATCHA_BENCH_ELO_MATCHES`` / ``MATCHA_BENCH_ELO_PLAYERS``.
* ``rating_visible_p50_ms``: a match ends over HTTP (the real app, in process)
  -> the after-commit hook enqueues -> a real ``matcha worker`` subprocess
  rates it -> the leaderboard (over HTTP, polled every 5 ms) shows the new
  ratings. ``MATCHA_BENCH_VISIBLE_MATCHES`` matches (default 12, duel rules).
* ``archive_builds_per_s``: replay archives of real self-played matches (whole
  logs with a valid chain) built by one worker draining a backlog
  (``build_archives``: batched loads and stores beside the build), and by the
  archives projection runner catching up on the same log (what a worker does
  when matches end); the one-match job (``build_archive``) in a loop and
  through RQ for comparison; with the average archive size and the CPU per
  build of the worker and of its PostgreSQL backend.
  ``MATCHA_BENCH_ARCHIVES`` matches (default 300).

Runs on a throwaway database of the server at $MATCHA_BENCH_DATABASE_URL
(default postgresql://postgres@127.0.0.1:5432/postgres) and the Redis at
$MATCHA_BENCH_REDIS_URL; prints a table, writes bench/results/workers.json.

    .venv/bin/python -m bench.bench_workers
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench.results_file import merge_results
from service.store.db import with_database
from service.store.migrate import apply_migrations

ELO_MATCHES = int(os.environ.get("MATCHA_BENCH_ELO_MATCHES", "1000000"))
ELO_PLAYERS = int(os.environ.get("MATCHA_BENCH_ELO_PLAYERS", "10000"))
VISIBLE_MATCHES = int(os.environ.get("MATCHA_BENCH_VISIBLE_MATCHES", "12"))
ARCHIVES = int(os.environ.get("MATCHA_BENCH_ARCHIVES", "300"))
ELO_AGAIN = os.environ.get("MATCHA_BENCH_ELO_AGAIN", "") not in ("", "0")
"""Also time a second recompute that replaces the full ladder (38 s more here)."""
SERVER_URL = os.environ.get(
    "MATCHA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("MATCHA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
RESULTS = Path(__file__).parent / "results" / "workers.json"
ADMIN_TOKEN = "bench-admin-" + uuid.uuid4().hex

TARGETS = {
    "elo_recompute_matches_per_s": (">=", 200_000),
    "rating_visible_p50_ms": ("<=", 1_000),
    "archive_builds_per_s": (">=", 1_000),
}


# -- the throwaway database ------------------------------------------------------------------


def one_row(conn: psycopg.Connection[tuple[Any, ...]], sql: str) -> tuple[Any, ...]:
    """The one row an aggregate query returns (``fetchone`` types it as maybe none)."""
    row = conn.execute(sql).fetchone()
    assert row is not None, sql
    return row


def _seed_ladder(
    conn: psycopg.Connection, ladder_id: str, *, hide: bool = False, rating: str = "{}"
) -> None:
    conn.execute(
        "INSERT INTO players (id, name, token_hash) VALUES ('bench-org', 'bench-org', %s)"
        " ON CONFLICT DO NOTHING",
        (hashlib.sha256(b"bench-org").digest(),),
    )
    conn.execute(
        "INSERT INTO ladders (id, name, ruleset, rating, hide_hands_in_replay, created_by)"
        " VALUES (%s, %s, 'standard', %s, %s, 'bench-org')",
        (ladder_id, ladder_id, rating, hide),
    )


_SYNTHETIC = """
INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash, hash)
SELECT 'm' || i, v,
       CASE v WHEN 1 THEN 'match_created' ELSE 'match_ended' END,
       CASE v WHEN 1 THEN jsonb_build_object(
           'type', 'match_created', 'v', 1, 'match_id', 'm' || i,
           'players', jsonb_build_array(
               'p' || a, 'p' || ((a + 1 + abs(hashint4(i + 7)) %% ({n} - 1)) %% {n})),
           'ruleset', jsonb_build_object('name', 'standard', 'max_hands', 10, 'hand_size', 5,
               'token_supply', 7, 'suit_tokens_to_win', 4, 'chasen_tokens_to_win', 4,
               'one_of_each_wins', true),
           'first_dealer', 0, 'seed_commitment', md5(i::text) || md5(i::text),
           'ladder_id', '{ladder}', 'dealing_scheme', 'matcha-deal-v1')
       ELSE jsonb_build_object(
           'type', 'match_ended', 'v', 1,
           'winner', CASE abs(hashint4(i * 3)) %% 5
                         WHEN 0 THEN NULL WHEN 1 THEN 1 WHEN 2 THEN 1 ELSE 0 END,
           'reason', 'qualified', 'seed', md5(i::text) || md5(i::text))
       END,
       'system', {recorded_at}, '\\x{zeros}'::bytea, '\\x{zeros}'::bytea
FROM generate_series(1, {matches}) AS i
CROSS JOIN LATERAL (SELECT abs(hashint4(i)) %% {n} AS a) AS pick
CROSS JOIN generate_series(1, 2) AS v
"""
# (Whatever order the rows go in, each match's match_created gets a lower
# position than its match_ended, and the matches end in the order of i.)


def _load_synthetic(
    conn: psycopg.Connection,
    matches: int,
    players: int,
    *,
    ladder: str = "elo",
    recorded_at: str = "now()",
) -> float:
    """Insert the synthetic ladder; returns seconds spent. ``recorded_at`` is the
    SQL of each event's time (``i`` numbers the matches from 1)."""
    started = time.perf_counter()
    # Secondary indexes are rebuilt after the load from their own definitions
    # (a bulk build is far faster than a million inserts into each).
    indexes = conn.execute(
        """SELECT i.indexname, i.indexdef, c.conname, pg_get_constraintdef(c.oid)
           FROM pg_indexes i LEFT JOIN pg_constraint c ON c.conname = i.indexname
           WHERE i.tablename = 'events' AND i.indexname <> 'events_pkey'"""
    ).fetchall()
    for name, _, constraint, _ in indexes:
        if constraint:
            conn.execute(f"ALTER TABLE events DROP CONSTRAINT {constraint}")
        else:
            conn.execute(f"DROP INDEX {name}")
    conn.execute("SET maintenance_work_mem = '256MB'")
    conn.execute(
        _SYNTHETIC.format(
            matches=matches, n=players, zeros="00" * 32, ladder=ladder, recorded_at=recorded_at
        ).replace("%%", "%")
    )
    for _name, definition, constraint, condef in indexes:
        if constraint:
            conn.execute(f"ALTER TABLE events ADD CONSTRAINT {constraint} {condef}")
        else:
            conn.execute(definition)
    conn.execute("ANALYZE events")
    return time.perf_counter() - started


def bench_elo(url: str) -> dict[str, Any]:
    from workers.ratings import apply_ladder

    with psycopg.connect(url, autocommit=True) as conn:
        _seed_ladder(conn, "elo")
        load_s = _load_synthetic(conn, ELO_MATCHES, ELO_PLAYERS)
        print(
            f"   loaded {ELO_MATCHES:,} synthetic matches of {ELO_PLAYERS:,} players"
            f" in {load_s:.1f} s"
        )
    runs = []
    for _ in range(2 if ELO_AGAIN else 1):
        with (
            psycopg.connect(url, autocommit=True) as conn,
            psycopg.connect(url, autocommit=True) as reader,
        ):
            phases: dict[str, float] = {}
            backends0 = [_backend_cpu_s(c) for c in (conn, reader)]
            t0, cpu0 = time.perf_counter(), time.process_time()

            def progress(
                phase: str, done: int, total: int, t0: float = t0, phases: dict[str, float] = phases
            ) -> None:
                phases.setdefault(phase, time.perf_counter() - t0)

            result = apply_ladder(conn, "elo", full=True, reader=reader, progress=progress)
            elapsed = time.perf_counter() - t0
            # CPU seconds: steadier than the wall clock on a shared machine
            cpu = {"python": time.process_time() - cpu0}
            backends = [_backend_cpu_s(c) for c in (conn, reader)]
            if None not in backends0 + backends:
                cpu["postgres"] = sum(backends) - sum(backends0)  # type: ignore[arg-type]
            runs.append((elapsed, result, phases, cpu))
    # The first run writes into empty tables, the second replaces a full ladder.
    first = runs[0]
    assert first[1]["matches"] == ELO_MATCHES, first[1]
    return {
        "elo_recompute_matches_per_s": ELO_MATCHES / first[0],
        "elo_recompute_s": first[0],
        "elo_recompute_again_matches_per_s": ELO_MATCHES / runs[-1][0] if ELO_AGAIN else None,
        "elo_phases_s": {
            "read_ladder_matches": first[2].get("rating", 0.0),
            "rate": first[2].get("writing", 0.0) - first[2].get("rating", 0.0),
            "write_and_commit": first[0] - first[2].get("writing", 0.0),
        },
        "elo_recompute_cpu_s": first[3],
        "elo_matches": ELO_MATCHES,
        "elo_players": ELO_PLAYERS,
        "elo_synthetic_load_s": load_s,
    }


# -- rating visibility: HTTP + a real worker process ------------------------------------------


async def _visible(url: str, prefix: str) -> list[float]:
    from litestar.testing import AsyncTestClient

    from service.app import create_app
    from service.bots import heuristic_bot, random_bot
    from service.bots.seat_view import bot_request
    from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

    settings = Settings(
        database=DatabaseSettings(url=url, migrate_on_start=False),
        redis=RedisSettings(url=REDIS_URL, prefix=prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
    )
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    rng = random.Random(11)
    latencies: list[float] = []
    async with AsyncTestClient(create_app(settings)) as client:

        async def register() -> tuple[str, dict[str, str]]:
            r = await client.post("/api/players", json={"name": f"b-{uuid.uuid4().hex[:10]}"})
            body = r.json()
            return body["id"], {"Authorization": f"Bearer {body['token']}"}

        org, org_auth = await register()
        await client.post(
            f"/api/admin/players/{org}/roles", json={"roles": ["organiser"]}, headers=admin
        )
        r = await client.post(
            "/api/ladders", json={"name": f"vis-{prefix}", "ruleset": "duel"}, headers=org_auth
        )
        ladder_id = r.json()["id"]
        players = [await register() for _ in range(4)]
        for _, auth in players:
            await client.post(f"/api/ladders/{ladder_id}/members", headers=auth)
        for k in range(VISIBLE_MATCHES):
            (a, a_auth), (b, b_auth) = rng.sample(players, 2)
            r = await client.post(
                f"/api/ladders/{ladder_id}/matches", json={"players": [a, b]}, headers=org_auth
            )
            match_id = r.json()["match_id"]
            auths = (a_auth, b_auth)
            views = [
                (await client.get(f"/api/matches/{match_id}", headers=h)).json() for h in auths
            ]
            bots = (random_bot, heuristic_bot)
            ended_at = None
            while ended_at is None:
                for seat in (0, 1):
                    request = bot_request(views[seat], bots[seat], rng)
                    if request is None:
                        continue
                    route, body = request
                    body["expected_version"] = views[seat]["version"]
                    r = await client.post(
                        f"/api/matches/{match_id}/{route}", json=body, headers=auths[seat]
                    )
                    if r.json()["view"]["result"] is not None:
                        ended_at = time.perf_counter()  # the match-ending command answered
                        break
                    views[seat] = r.json()["view"]
                    views[1 - seat] = (
                        await client.get(f"/api/matches/{match_id}", headers=auths[1 - seat])
                    ).json()
            while True:
                board = (await client.get(f"/api/ladders/{ladder_id}/leaderboard")).json()
                if board["matches"] >= k + 1:
                    latencies.append((time.perf_counter() - ended_at) * 1000)
                    break
                if time.perf_counter() - ended_at > 30:
                    raise RuntimeError("the leaderboard never showed the match")
                await asyncio.sleep(0.005)
    return latencies


def bench_visible(url: str) -> dict[str, Any]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "worker", "--no-fork", "--no-catch-up"],
        env={
            **os.environ,
            "DATABASE_URL": url,
            "REDIS_URL": REDIS_URL,
            "MATCHA_REDIS_PREFIX": prefix,
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        latencies = asyncio.run(_visible(url, prefix))
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    latencies.sort()
    return {
        "rating_visible_p50_ms": statistics.median(latencies),
        "rating_visible_max_ms": latencies[-1],
        "rating_visible_matches": len(latencies),
    }


# -- archive builds -------------------------------------------------------------------------


def _self_played(conn: psycopg.Connection, count: int) -> list[str]:
    """Real matches (bots through the engine), written with a valid hash chain."""
    from schemas.rules import DUEL, STANDARD
    from service.bots import heuristic_bot, random_bot
    from service.engine.selfplay import play_match
    from service.store.bulk import EVENTS_COPY, copy_log

    _seed_ladder(conn, "arch")
    rng = random.Random(5)
    names = [f"arch-{i}" for i in range(20)]
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO players (id, name, token_hash) VALUES (%s, %s, %s)",
            [(n, n.upper(), hashlib.sha256(n.encode()).digest()) for n in names],
        )
    start = datetime(2026, 1, 1, tzinfo=UTC)
    match_ids = []
    with (
        conn.cursor() as cur,
        cur.copy(EVENTS_COPY) as copy,
    ):
        for i in range(count):
            match_id = f"arch-m{i}"
            _, log = play_match(
                (random_bot, heuristic_bot), STANDARD if i % 2 else DUEL, rng, match_id=match_id
            )
            a, b = rng.sample(names, 2)
            from msgspec.structs import replace

            log[0] = replace(log[0], players=(a, b), ladder_id="arch")
            times = (start + timedelta(seconds=i * 600 + v) for v in range(1, len(log) + 1))
            copy_log(copy, match_id, log, times)
            match_ids.append(match_id)
    return match_ids


def _backend_cpu_s(conn: psycopg.Connection) -> float | None:
    """CPU seconds the connection's PostgreSQL backend has used (None: not on this machine)."""
    try:
        fields = Path(f"/proc/{conn.info.backend_pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_archives(url: str) -> dict[str, Any]:
    """Archives of ARCHIVES self-played matches, each measurement on an empty table.

    * ``archive_builds_per_s``: a worker draining a backlog, ``build_archives``
      (the job body behind the replays queue: batches of ``ARCHIVE_BATCH``,
      the next batch loaded and the last one stored while one is built);
    * by the archives projection runner (``workers.projections``), from position 0;
    * the one-match job body (``build_archive``) in a loop, and through RQ
      with a job per match (``enqueue_archive``), for comparison;
    * CPU per archive of the worker and of its PostgreSQL backend (from /proc
      when the server is local): on two free cores a worker cannot go faster
      than 1 / the larger of the two.
    """
    import threading

    from redis import Redis
    from rq import SimpleWorker

    from service.broker.jobs import enqueue_archive, queues
    from workers import db
    from workers.projections import ArchivesProjection, Runner
    from workers.replays import build_archive, build_archives

    os.environ["DATABASE_URL"] = url
    with psycopg.connect(url, autocommit=True) as conn:
        match_ids = _self_played(conn, ARCHIVES)
        events = one_row(conn, "SELECT count(*) FROM events WHERE match_id LIKE 'arch-%'")[0]
        conn.execute("ANALYZE")

    def clear() -> None:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("DELETE FROM replay_archives")

    def timed(run: Any) -> tuple[float, float, float | None]:
        """(wall s, this process's CPU s, its PostgreSQL backend's CPU s) of run()."""
        clear()
        backend = db.connection()
        pg0 = _backend_cpu_s(backend)
        t0, cpu0 = time.perf_counter(), time.process_time()
        run()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        pg1 = _backend_cpu_s(backend)
        return wall, cpu, None if pg0 is None or pg1 is None else pg1 - pg0

    n = len(match_ids)
    single_s, single_cpu, _ = timed(lambda: [build_archive(m) for m in match_ids])
    batch_s, batch_cpu, batch_pg = timed(lambda: build_archives(match_ids))

    redis = Redis.from_url(REDIS_URL)

    def via_rq(enqueue: Any) -> float:
        prefix = f"bench-{uuid.uuid4().hex[:8]}"
        clear()
        for match_id in match_ids:
            enqueue(match_id, prefix)
        t0 = time.perf_counter()
        SimpleWorker(queues(redis=redis, prefix=prefix), connection=redis).work(
            burst=True, logging_level="WARNING"
        )
        return time.perf_counter() - t0

    def by_the_runner() -> None:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("UPDATE projection_positions SET position = 0 WHERE name = 'archives'")
        runner = Runner(ArchivesProjection(), url, stop=threading.Event(), sweep_at_start=False)
        try:
            runner.catch_up()
        finally:
            runner.close()

    runner_s, _, _ = timed(by_the_runner)
    rq_single_s = via_rq(lambda m, p: enqueue_archive(m, redis=redis, prefix=p))
    db.close_connections()
    with psycopg.connect(url, autocommit=True) as conn:
        built, avg_bytes, avg_raw = one_row(
            conn,
            "SELECT count(*), avg(octet_length(archive)), avg(raw_size) FROM replay_archives"
            " WHERE match_id LIKE 'arch-%'",
        )
    assert built == n
    return {
        "archive_builds_per_s": n / batch_s,
        "archive_builds_per_s_by_the_runner": n / runner_s,
        "archive_build_cpu_ms": batch_cpu / n * 1000,
        "archive_build_pg_cpu_ms": None if batch_pg is None else batch_pg / n * 1000,
        "archive_single_builds_per_s": n / single_s,
        "archive_single_build_cpu_ms": single_cpu / n * 1000,
        "archive_single_jobs_per_s_via_rq": n / rq_single_s,
        "archive_avg_bytes": float(avg_bytes),
        "archive_avg_raw_bytes": float(avg_raw),
        "archive_avg_events": events / n,
        "archive_matches": n,
    }


# -- main ---------------------------------------------------------------------------------


def _python_loop_ns() -> float:
    """How slow this machine is right now (the 2 cores are shared): ns per bare loop step."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        total = 0
        for i in range(200_000):
            total += i
        best = min(best, (time.perf_counter() - t0) / 200_000 * 1e9)
    return best


def _meets(name: str, value: float) -> str:
    op, target = TARGETS[name]
    ok = value >= target if op == ">=" else value <= target
    return f"{op} {target:,}  {'ok' if ok else 'MISSED'}"


@contextmanager
def throwaway_database() -> Iterator[str]:
    """A fresh, migrated database of its own for one measurement (dropped after)."""
    name = f"bench_workers_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(SERVER_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = with_database(SERVER_URL, name)
    try:
        apply_migrations(url)
        yield url
    finally:
        with psycopg.connect(SERVER_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    results: dict[str, Any] = {}
    # Each measurement gets its own database: the API's start-up catch-ups, for
    # one, would otherwise walk the million synthetic matches.
    print(
        f"-- Elo recompute: {ELO_MATCHES:,} matches, {ELO_PLAYERS:,} players"
        + ("" if ELO_MATCHES == 1_000_000 else "  (REDUCED size)")
    )
    with throwaway_database() as url:
        results["python_loop_ns_at_elo"] = _python_loop_ns()
        results |= bench_elo(url)
    print(
        f"   {results['elo_recompute_matches_per_s']:,.0f} matches/s"
        f" ({results['elo_recompute_s']:.2f} s)"
    )
    print(f"-- rating visible: {VISIBLE_MATCHES} matches over HTTP, worker subprocess")
    with throwaway_database() as url:
        results |= bench_visible(url)
    print(f"   p50 {results['rating_visible_p50_ms']:,.1f} ms")
    print(f"-- archives: {ARCHIVES} self-played matches")
    with throwaway_database() as url:
        results["python_loop_ns_at_archives"] = _python_loop_ns()
        results |= bench_archives(url)
    print(f"   {results['archive_builds_per_s']:,.1f} builds/s")
    results["load_average"] = os.getloadavg()[0]
    results["python_loop_ns"] = max(
        _python_loop_ns(), results["python_loop_ns_at_elo"], results["python_loop_ns_at_archives"]
    )
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
    results["targets"] = {k: f"{op} {v}" for k, (op, v) in TARGETS.items()}

    rows = [
        ("elo_recompute_matches_per_s", results["elo_recompute_matches_per_s"], "matches/s"),
        ("rating_visible_p50_ms", results["rating_visible_p50_ms"], "ms"),
        ("archive_builds_per_s", results["archive_builds_per_s"], "builds/s"),
    ]
    print(f"{'metric':34} {'value':>14}  {'unit':10} target")
    for metric, value, unit in rows:
        print(f"{metric:34} {value:>14,.1f}  {unit:10} {_meets(metric, value)}")
    if results["elo_recompute_again_matches_per_s"]:
        print(
            f"{'  recompute again (replace ladder)':34}"
            f" {results['elo_recompute_again_matches_per_s']:>14,.1f}  matches/s"
        )
    phases = results["elo_phases_s"]
    print(
        f"{'  phases (s): read / rate / write':34} {phases['read_ladder_matches']:>6.2f} /"
        f" {phases['rate']:.2f} / {phases['write_and_commit']:.2f}"
    )
    cpu = results["elo_recompute_cpu_s"]
    print(
        f"{'  recompute CPU (s): Python / PG':34} {cpu['python']:>6.2f} /"
        f" {cpu.get('postgres', float('nan')):.2f} (the two backends)"
    )
    print(f"{'  rating visible, max':34} {results['rating_visible_max_ms']:>14,.1f}  ms")
    print(
        f"{'  archive builds by the runner':34}"
        f" {results['archive_builds_per_s_by_the_runner']:>14,.1f}"
        "  builds/s (the projection catching up on the log)"
    )
    print(
        f"{'  archive build, worker CPU':34} {results['archive_build_cpu_ms']:>14,.2f}  ms"
        f" (PostgreSQL backend: {results['archive_build_pg_cpu_ms'] or 0:,.2f} ms)"
    )
    print(
        f"{'  one match per job body / RQ job':34}"
        f" {results['archive_single_builds_per_s']:>14,.1f}  builds/s"
        f" ({results['archive_single_build_cpu_ms']:,.2f} ms CPU);"
        f" {results['archive_single_jobs_per_s_via_rq']:,.1f} /s via RQ"
    )
    print(
        f"{'  archive size, average':34} {results['archive_avg_bytes']:>14,.0f}  bytes"
        f" (gzip; {results['archive_avg_raw_bytes']:,.0f} raw JSON,"
        f" {results['archive_avg_events']:.0f} events)"
    )
    print(
        f"(load average {results['load_average']:.2f}; {results['machine']}; a bare Python"
        f" `s += i` loop took up to {results['python_loop_ns']:.0f} ns/iteration during the"
        " run, ~30 ns on an idle core of this kind: scale the CPU-bound numbers by that)"
    )
    merge_results(RESULTS, results)


if __name__ == "__main__":
    main()
