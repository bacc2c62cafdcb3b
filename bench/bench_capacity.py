"""capacity: how many machines a load needs, from measured costs (docs/scaling.md).

The model multiplies a load (concurrent matches, spectators per match, a
human pace) by what one command, one viewer frame, one ended match's
projections and one Redis message cost, each measured:

* read from the other benches' results where they measure it, so the model
  moves when they do: CPU per command (API server and PostgreSQL backends,
  ``api.json``), per viewer frame (``live.json``, 100 matches x 10 spectators);
* measured here when missing, on servers of this bench's own (Debian's
  PostgreSQL 15 primary + hot standby and redis-server, via service.cluster;
  the shared servers would mix other people's WAL into the count): the real
  API (bench_api's server and bots) plays MATCHA_CAPACITY_MATCHES whole
  matches (default 40), and the bench reads the WAL they wrote
  (``pg_current_wal_lsn()`` before and after), the Redis messages they sent
  (``INFO commandstats``) and the CPU Redis spent; the projection runners
  then catch up on those matches (archives, ratings, summaries), timed with
  their PostgreSQL backends; and an append is timed with and without a
  synchronous standby (``synchronous_standby_names``).

The assumptions are parameters (environment): MATCHA_CAPACITY_SECONDS_PER_MOVE
(6: a human pace, a command every 6 s in each match), _SPECTATORS (10),
_CORES (16 per machine), _UTILISATION (0.6: the share of a machine planned
busy), _PRIMARY_CORES (64: the largest primary), _PRIMARY_WAL_MB_S (300: a
WAL rate an NVMe-backed primary sustains, assumed, not measured here; the
rate measured on this machine is printed beside it). MATCHA_CAPACITY_MEASURE=0
skips the measuring and uses the last measured figures. Writes
bench/results/capacity.json.

    .venv/bin/python -m bench capacity
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import random
import signal
import statistics
import subprocess
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import redis

from bench.results_file import RESULTS_DIR, merge_results

RESULTS = RESULTS_DIR / "capacity.json"
MATCHES = int(os.environ.get("MATCHA_CAPACITY_MATCHES", "40"))
MEASURE = os.environ.get("MATCHA_CAPACITY_MEASURE", "1") != "0"
SYNC_APPENDS = int(os.environ.get("MATCHA_CAPACITY_SYNC_APPENDS", "600"))


def _env_float(name: str, default: float) -> float:
    return float(os.environ.get(f"MATCHA_CAPACITY_{name}", default))


@dataclass(frozen=True)
class Assumptions:
    seconds_per_move: float = _env_float("SECONDS_PER_MOVE", 6.0)
    spectators: float = _env_float("SPECTATORS", 10.0)
    cores_per_machine: float = _env_float("CORES", 16.0)
    utilisation: float = _env_float("UTILISATION", 0.6)
    primary_cores: float = _env_float("PRIMARY_CORES", 64.0)
    primary_wal_mb_s: float = _env_float("PRIMARY_WAL_MB_S", 300.0)


# ---------------------------------------------------------------- measuring here


def _uptime() -> str:
    done = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _lsn(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


def _redis_counts(client: redis.Redis) -> dict[str, float]:
    stats = client.info("commandstats")
    publishes = sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("publish", "spublish")
    )
    total = int(client.info("stats")["total_commands_processed"])
    return {"publishes": publishes, "commands": total}


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def _server_cpu_s(postmaster: int) -> float:
    """All a PostgreSQL server spent: the postmaster, its live processes (backends,
    WAL writer, checkpointer, WAL sender...), and those it has reaped (a connection
    that closed): the bench's own server, so nobody else's work is in it."""
    root = psutil.Process(postmaster)
    times = root.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in root.children(recursive=True):
        try:
            mine = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += mine.user + mine.system
    return float(total)


def _pattern_subscribers(client: redis.Redis) -> int:
    """Connections holding a pattern subscription (one per API process)."""
    clients = client.client_list()
    return sum(1 for c in clients if int(c.get("psub", 0)) > 0)


async def _play_whole_matches(base_url: str, tables: list[Any]) -> tuple[int, int, list[str]]:
    """A new match at every table, played to its end: (accepted commands, view reads,
    the matches)."""
    from bench.bench_api import Recorder, _new_match, _play

    rec = Recorder()
    rec.started_at, rec.stop_at = 0.0, math.inf
    limits = httpx.Limits(max_connections=2 * len(tables) + 4)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:
        for table in tables:
            await _new_match(client, table)  # created inside the measured stretch
        rng = random.Random(7)
        await asyncio.gather(*(_play(client, rec, table, rng) for table in tables))
    if rec.matches_finished != len(tables):
        raise RuntimeError(f"{rec.matches_finished} of {len(tables)} matches finished")
    return len(rec.command_ms), len(rec.read_ms), [t.match_id for t in tables]


async def _tables(base_url: str, matches: int) -> list[Any]:
    from bench.bench_api import _setup

    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        return await _setup(client, matches)


def _measure_matches(
    primary_url: str, postmaster: int, redis_url: str, redis_pid: int
) -> dict[str, float]:
    from bench.bench_api import bench_server
    from service.store.db import with_database
    from workers.projections import catch_up_all

    with bench_server(primary_url, "capacity", {"REDIS_URL": redis_url}) as (base, _pid, name):
        tables = asyncio.run(_tables(base, MATCHES))
        client = redis.Redis.from_url(redis_url)
        subscribers = _pattern_subscribers(client)
        with psycopg.connect(primary_url, autocommit=True) as conn:
            wal0, redis0, redis_cpu0 = _lsn(conn), _redis_counts(client), _cpu_s(redis_pid)
            pg0 = _server_cpu_s(postmaster)
            commands, reads, played = asyncio.run(_play_whole_matches(base, tables))
            wal1, redis1, redis_cpu1 = _lsn(conn), _redis_counts(client), _cpu_s(redis_pid)
            pg_cpu = _server_cpu_s(postmaster) - pg0
        database = with_database(primary_url, name)
        with psycopg.connect(database, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM events WHERE match_id = ANY(%s)", (played,)
            ).fetchone()
        events = int(row[0]) if row else 0
        # The projections of those matches, as a worker applies them when matches end.
        pg0, cpu0 = _server_cpu_s(postmaster), time.process_time()
        done = catch_up_all(database)
        worker_cpu = time.process_time() - cpu0
        projection_db_cpu = _server_cpu_s(postmaster) - pg0
    publishes = redis1["publishes"] - redis0["publishes"]
    delivered = publishes * max(subscribers, 1)  # a pattern subscription per API process
    operations = redis1["commands"] - redis0["commands"] + delivered
    return {
        "matches": MATCHES,
        "commands": commands,
        "view_reads": reads,
        "events": events,
        "commands_per_match": commands / MATCHES,
        "events_per_command": events / max(commands, 1),
        "wal_bytes_per_match": (wal1 - wal0) / MATCHES,
        "wal_bytes_per_command": (wal1 - wal0) / max(commands, 1),
        "postgres_server_cpu_ms_per_command": pg_cpu * 1000 / max(commands, 1),
        "redis_publishes_per_command": publishes / max(commands, 1),
        "redis_commands_per_command": (redis1["commands"] - redis0["commands"]) / max(commands, 1),
        "redis_pattern_subscribers": subscribers,
        "redis_cpu_us_per_command_idle_included": (redis_cpu1 - redis_cpu0)
        * 1e6
        / max(commands, 1),
        "redis_operations_during_matches": float(operations),
        "projection_cpu_ms_per_match": (worker_cpu + projection_db_cpu) * 1000 / MATCHES,
        "projection_worker_cpu_ms_per_match": worker_cpu * 1000 / MATCHES,
        "projection_database_cpu_ms_per_match": projection_db_cpu * 1000 / MATCHES,
        "projections_applied": float(sum(done.values())),
    }


async def _append_ms(url: str, appends: int, run: str) -> list[float]:
    from schemas.events import CardPlayed, Event, Passed
    from service.store.db import open_pool
    from service.store.events import EventStore

    # bench_store's append: three events (its appends_per_s times this append's WAL
    # is the rate of WAL this machine's primary writes at its ceiling)
    events: list[Event] = [
        CardPlayed(seat=0, hand=1, round=1, card="M3", target="number"),
        Passed(seat=1, hand=1, round=1),
        CardPlayed(seat=0, hand=1, round=2, card="C1", target="suit"),
    ]
    pool = await open_pool(url, min_size=1, max_size=1)
    try:
        store = EventStore(pool)
        spent: list[float] = []
        for n in range(appends):
            t0 = time.perf_counter()
            await store.append(f"sync-{run}", len(events) * n, events, actor="bench")
            spent.append((time.perf_counter() - t0) * 1000)
        return spent
    finally:
        await pool.close()


def _measure_synchronous_commit(pair: Any) -> dict[str, float]:
    """One append after another, asynchronous standby then synchronous, in turns."""
    from service.store.db import scratch_database, with_database
    from service.store.migrate import apply_migrations

    sides: dict[str, list[float]] = {"async": [], "sync": []}
    with scratch_database(pair.primary.url, "capacity_sync_") as name:
        url = with_database(pair.primary.url, name)
        apply_migrations(url)
        with psycopg.connect(pair.primary.url, autocommit=True) as admin:
            wal0 = _lsn(admin)
            try:
                for round_ in range(3):
                    for side, standbys in (("async", ""), ("sync", pair.standby.name)):
                        admin.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{standbys}'")
                        admin.execute("SELECT pg_reload_conf()")
                        run = f"{side}-{round_}-{uuid.uuid4().hex[:6]}"
                        sides[side] += asyncio.run(_append_ms(url, SYNC_APPENDS // 3, run))
            finally:
                admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
                admin.execute("SELECT pg_reload_conf()")
            wal_per_append = (_lsn(admin) - wal0) / max(len(sides["async"]) + len(sides["sync"]), 1)

    def q(values: list[float], p: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    return {
        "append_async_standby_p50_ms": statistics.median(sides["async"]),
        "append_async_standby_p99_ms": q(sides["async"], 0.99),
        "append_sync_standby_p50_ms": statistics.median(sides["sync"]),
        "append_sync_standby_p99_ms": q(sides["sync"], 0.99),
        "appends_per_side": float(len(sides["sync"])),
        "wal_bytes_per_append": wal_per_append,
    }


REDIS_BURST = 20_000
PUBLISHERS = 4
HINT_BYTES = 400
"""About a hint's size (a few public events as JSON)."""


def _redis_cpu_per_operation(url: str, pid: int, subscribers: int = 2) -> float:
    """Redis's CPU per operation (a command, or one delivery of a hint), from a burst
    of hints to ``subscribers`` pattern subscribers: over a whole run of matches
    Redis's own timers (10 a second) outweigh the little the matches ask of it."""
    import threading

    stop = threading.Event()
    listeners = []
    for _ in range(subscribers):
        pubsub = redis.Redis.from_url(url).pubsub(ignore_subscribe_messages=True)
        pubsub.psubscribe("capacity:live:*")
        listeners.append(pubsub)

    def drain(pubsub: Any) -> None:
        while not stop.is_set():
            pubsub.get_message(timeout=0.1)

    threads = [threading.Thread(target=drain, args=(p,), daemon=True) for p in listeners]
    for thread in threads:
        thread.start()
    payload = b"x" * HINT_BYTES

    def publish(first: int) -> None:
        # one hint per request, as an API process sends them (no pipelining)
        client = redis.Redis.from_url(url)
        for n in range(first, REDIS_BURST, PUBLISHERS):
            client.publish(f"capacity:live:match:{n % 997}", payload)
        client.close()

    try:
        cpu0 = _cpu_s(pid)
        publishers = [threading.Thread(target=publish, args=(n,)) for n in range(PUBLISHERS)]
        for thread in publishers:
            thread.start()
        for thread in publishers:
            thread.join()
        spent = _cpu_s(pid) - cpu0
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
        for pubsub in listeners:
            pubsub.close()
    return spent * 1e6 / (REDIS_BURST * (1 + subscribers))


def _start_redis(folder: Path) -> tuple[str, subprocess.Popen[bytes]]:
    from service.cluster.redis_nodes import REDIS_SERVER
    from service.processes import free_port, spawn, wait_until

    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = folder / "redis.log"
    argv = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    proc = spawn([*argv, "--appendonly", "no", "--logfile", str(log)], stop_signal=signal.SIGTERM)
    client = redis.Redis(port=port, socket_timeout=1)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False

    wait_until(answers, proc, "redis-server", log, 30)
    return f"redis://127.0.0.1:{port}/0", proc


def measure() -> dict[str, Any]:
    """Start this bench's own servers, measure, stop them."""
    from service.cluster.postgres_pair import start_postgres_pair
    from service.processes import free_port, stop

    with tempfile.TemporaryDirectory(prefix="matcha-capacity-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # the PostgreSQL system user (under root) reaches its data
        pair = start_postgres_pair(folder / "postgres", free_port(), free_port())
        redis_url, redis_proc = _start_redis(folder / "redis")
        try:
            assert pair.primary.server is not None
            postmaster = pair.primary.server.pid
            figures: dict[str, Any] = _measure_matches(
                pair.primary.url, postmaster, redis_url, redis_proc.pid
            )
            figures["redis_cpu_us_per_operation"] = _redis_cpu_per_operation(
                redis_url, redis_proc.pid
            )
            figures.update(_measure_synchronous_commit(pair))
        finally:
            stop(redis_proc, signal.SIGTERM, 10)
            pair.stop()
    figures["uptime"] = _uptime()
    figures["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return figures


# ---------------------------------------------------------------- the model


@dataclass(frozen=True)
class Costs:
    api_cpu_ms_per_command: float
    db_cpu_ms_per_command: float
    frame_cpu_us: float
    events_per_command: float
    commands_per_match: float
    projection_cpu_ms_per_match: float
    wal_bytes_per_command: float
    redis_commands_per_command: float
    redis_publishes_per_command: float
    redis_cpu_us_per_operation: float


def _read(name: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((RESULTS_DIR / name).read_text())
        return data
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def costs(measured: dict[str, Any]) -> tuple[Costs, dict[str, str]]:
    """The model's inputs, and where each comes from."""
    here = f"capacity.json (measured {measured.get('measured_at', '?')})"
    api, live = _read("api.json"), _read("live.json")
    scenarios: list[dict[str, Any]] = live.get("scenarios", [])
    frames = next((s for s in scenarios if s.get("scenario") == "many_matches"), {})
    chosen = Costs(
        api_cpu_ms_per_command=float(api["server_cpu_ms_per_command"]),
        # The whole server's CPU when measured here (its backends, and the WAL writer, the
        # checkpointer, the WAL sender to the standby...), else the backends' (api.json)
        db_cpu_ms_per_command=float(
            measured.get("postgres_server_cpu_ms_per_command", api["database_cpu_ms_per_command"])
        ),
        frame_cpu_us=float(frames["server_cpu_us_per_frame"]),
        events_per_command=float(measured["events_per_command"]),
        commands_per_match=float(measured["commands_per_match"]),
        projection_cpu_ms_per_match=float(measured["projection_cpu_ms_per_match"]),
        wal_bytes_per_command=float(measured["wal_bytes_per_command"]),
        redis_commands_per_command=float(measured["redis_commands_per_command"]),
        redis_publishes_per_command=float(measured["redis_publishes_per_command"]),
        redis_cpu_us_per_operation=float(measured["redis_cpu_us_per_operation"]),
    )
    sources = {
        "api_cpu_ms_per_command": "api.json server_cpu_ms_per_command (HTTP, view read included)",
        "db_cpu_ms_per_command": (
            f"{here}: the whole primary's CPU (api.json counts its backends only:"
            f" {api.get('database_cpu_ms_per_command')} ms)"
            if "postgres_server_cpu_ms_per_command" in measured
            else "api.json database_cpu_ms_per_command"
        ),
        "frame_cpu_us": "live.json many_matches server_cpu_us_per_frame (100 x 10 spectators)",
        **{
            k: here
            for k in (
                "events_per_command",
                "commands_per_match",
                "projection_cpu_ms_per_match",
                "wal_bytes_per_command",
                "redis_commands_per_command",
                "redis_publishes_per_command",
                "redis_cpu_us_per_operation",
            )
        },
    }
    return chosen, sources


@dataclass(frozen=True)
class Plan:
    name: str
    matches: float
    commands_per_s: float
    frames_per_s: float
    api_cores: float
    worker_cores: float
    primary_cores: float
    redis_cores_one_node: float
    redis_cores_sharded: float
    wal_mb_s: float
    api_machines: int
    worker_machines: int
    redis_shards: int
    primaries_by_cpu: int
    primaries_by_wal: int

    @property
    def one_primary(self) -> bool:
        return self.primaries_by_cpu <= 1 and self.primaries_by_wal <= 1


def plan(name: str, c: Costs, a: Assumptions, *, matches: float, commands_per_s: float) -> Plan:
    """The cores and machines a load needs (each tier planned ``utilisation`` busy)."""
    viewers = a.spectators + 2  # every spectator, and both seats
    frames = commands_per_s * c.events_per_command * viewers
    api = commands_per_s * c.api_cpu_ms_per_command / 1000 + frames * c.frame_cpu_us / 1e6
    ended_per_s = commands_per_s / c.commands_per_match
    workers = ended_per_s * c.projection_cpu_ms_per_match / 1000
    db = commands_per_s * c.db_cpu_ms_per_command / 1000
    machine = a.cores_per_machine * a.utilisation
    api_machines = max(2, math.ceil(api / machine))
    # Redis's work per command: the commands it is sent, and one delivery of each hint
    # per subscriber. One Redis: plain pub/sub sends every hint to every API process
    # (its pattern subscription). Sharded, with the proxy sticky by match: to the one
    # process whose viewers watch it, through the one shard of its slot.
    sent, hints = c.redis_commands_per_command, c.redis_publishes_per_command
    per_op = commands_per_s * c.redis_cpu_us_per_operation / 1e6
    one_node = per_op * (sent + hints * api_machines)
    sharded = per_op * (sent + hints)
    wal = commands_per_s * c.wal_bytes_per_command / 1e6
    return Plan(
        name=name,
        matches=matches,
        commands_per_s=commands_per_s,
        frames_per_s=frames,
        api_cores=api,
        worker_cores=workers,
        primary_cores=db,
        redis_cores_one_node=one_node,
        redis_cores_sharded=sharded,
        wal_mb_s=wal,
        api_machines=api_machines,
        worker_machines=max(1, math.ceil(workers / machine)),
        redis_shards=max(3, math.ceil(sharded / a.utilisation)),
        primaries_by_cpu=math.ceil(db / (a.primary_cores * a.utilisation)),
        primaries_by_wal=math.ceil(wal / (a.primary_wal_mb_s * a.utilisation)),
    )


def scenarios(c: Costs, a: Assumptions) -> list[Plan]:
    out = [
        plan(f"{n:,} matches", c, a, matches=n, commands_per_s=n / a.seconds_per_move)
        for n in (10_000, 100_000, 1_000_000)
    ]
    rate = 100_000
    out.append(
        plan(f"{rate:,} moves/s", c, a, matches=rate * a.seconds_per_move, commands_per_s=rate)
    )
    return out


def _print(plans: list[Plan], c: Costs, a: Assumptions, measured: dict[str, Any]) -> None:
    print(
        f"costs: command {c.api_cpu_ms_per_command:.2f} ms API + {c.db_cpu_ms_per_command:.2f} ms"
        f" PostgreSQL (the whole primary); viewer frame {c.frame_cpu_us:.0f} us;"
        f" {c.events_per_command:.2f} events"
        f" per command, {c.commands_per_match:.1f} commands per match; projections"
        f" {c.projection_cpu_ms_per_match:.2f} ms per ended match; WAL"
        f" {c.wal_bytes_per_command:,.0f} B per command"
        f" ({measured.get('wal_bytes_per_match', 0):,.0f} B per match); Redis"
        f" {c.redis_commands_per_command:.2f} commands and {c.redis_publishes_per_command:.2f}"
        f" hints per command, {c.redis_cpu_us_per_operation:.1f} us per operation"
    )
    print(
        f"assumptions: a move every {a.seconds_per_move:g} s per match, {a.spectators:g}"
        f" spectators, {a.cores_per_machine:g}-core machines {a.utilisation:.0%} busy, a primary"
        f" of {a.primary_cores:g} cores and {a.primary_wal_mb_s:g} MB/s of WAL"
    )
    head = f"{'load':>18}{'moves/s':>10}{'frames/s':>11}{'API':>6}{'work':>6}"
    print(head + f"{'Redis':>7}{'1 Redis':>9}{'PG cores':>10}{'WAL MB/s':>10}  one primary?")
    for p in plans:
        print(
            f"{p.name:>18}{p.commands_per_s:>10,.0f}{p.frames_per_s:>11,.0f}"
            f"{p.api_machines:>6}{p.worker_machines:>6}{p.redis_shards:>7}"
            f"{p.redis_cores_one_node:>9.2f}{p.primary_cores:>10.1f}{p.wal_mb_s:>10.1f}  "
            + ("yes" if p.one_primary else f"no: {max(p.primaries_by_cpu, p.primaries_by_wal)}")
        )
    print(
        "(API, work: machines of API processes, of workers; Redis: shards of the cluster, each"
        " with a replica; 1 Redis: the cores one Redis would need, plain pub/sub)"
    )


def main() -> dict[str, Any]:
    stored = _read("capacity.json")
    measured: dict[str, Any] = stored.get("measured", {})
    if MEASURE:
        print(f"measuring on this bench's own servers ({MATCHES} whole matches) ...")
        measured = measure()
        print(f"measured; load: {measured['uptime']}")
        print(
            f"append with a synchronous standby: p50 {measured['append_sync_standby_p50_ms']:.2f}"
            f" ms, p99 {measured['append_sync_standby_p99_ms']:.2f} ms; asynchronous:"
            f" p50 {measured['append_async_standby_p50_ms']:.2f} ms,"
            f" p99 {measured['append_async_standby_p99_ms']:.2f} ms"
        )
    if not measured:
        raise SystemExit("nothing measured yet: run with MATCHA_CAPACITY_MEASURE=1 first")
    c, sources = costs(measured)
    a = Assumptions()
    plans = scenarios(c, a)
    _print(plans, c, a, measured)
    store_rate = float(_read("store.json").get("store_appends_per_s", 0.0))
    wal_here = store_rate * float(measured.get("wal_bytes_per_append", 0.0)) / 1e6
    print(
        f"this machine's primary at its append ceiling (store.json, {store_rate:,.0f} appends/s"
        f" of 3 events): {wal_here:.1f} MB/s of WAL, on {os.cpu_count()} cores"
    )
    result = {
        "measured": measured,
        "costs": asdict(c),
        "sources": sources,
        "assumptions": asdict(a),
        "plans": [{**asdict(p), "one_primary": p.one_primary} for p in plans],
        "wal_mb_s_here_at_store_ceiling": round(wal_here, 2),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }
    merge_results(RESULTS, result)
    return result


if __name__ == "__main__":
    main()
