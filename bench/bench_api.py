"""commands_per_s and command_p99_ms: 100 concurrent matches played by bots over real HTTP.

The API runs as uvicorn in a subprocess (``create_app`` factory, $MATCHA_BENCH_API_WORKERS
workers, default 2) on a throwaway database of the server at $MATCHA_BENCH_DATABASE_URL
(default postgresql://postgres@127.0.0.1:5432/postgres, needs CREATE DATABASE). The
client is one asyncio process with httpx: MATCHES matches at once, each driven by two
bots (``service.bots`` reading only their own seat's view). A bot sends its command
with the version it saw; after a command the opponent reads its fresh view (a GET,
timed apart). Each match waits THINK_MS between commands like a player would, so
the offered load is about MATCHES * 1000 / (THINK_MS + latency) commands/s; set
MATCHA_BENCH_THINK_MS=0 for a closed loop (the server's ceiling). Runs for
MATCHA_BENCH_API_SECONDS (default 20) after a warm-up, then prints a table and
writes bench/results/api.json.

    .venv/bin/python -m bench.bench_api
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import msgspec
import psycopg

from bench.results_file import merge_results
from service.api.http_protocol import PROTOCOL
from service.api.seat_state import bot_request
from service.bots import heuristic_bot, random_bot
from service.embedded import free_port
from service.store.db import with_database
from service.store.migrate import apply_migrations

MATCHES = int(os.environ.get("MATCHA_BENCH_MATCHES", "100"))
WORKERS = int(os.environ.get("MATCHA_BENCH_API_WORKERS", "2"))
SECONDS = float(os.environ.get("MATCHA_BENCH_API_SECONDS", "20"))
WARMUP_S = float(os.environ.get("MATCHA_BENCH_WARMUP_S", "3"))
THINK_MS = float(os.environ.get("MATCHA_BENCH_THINK_MS", "60"))
RESULTS = Path(__file__).parent / "results" / "api.json"
ADMIN_TOKEN = "bench-admin-" + uuid.uuid4().hex

_decode = msgspec.json.decode
_encode = msgspec.json.encode
CLIENT = os.environ.get("MATCHA_BENCH_CLIENT", "raw")
"""``raw``: the timed requests go over ``Http11``, one keep-alive connection per
match; ``httpx``: over the shared ``httpx.AsyncClient``. Setup always uses httpx.
Why raw by default: on this 2-core machine httpx spent about twice the server's
CPU per command (its connection pool and socket bookkeeping), so the client,
not the API, set the pace."""


class Reply:
    """The two things the bench reads of a response."""

    def __init__(self, status_code: int, content: bytes) -> None:
        self.status_code = status_code
        self.content = content


class Http11:
    """A minimal HTTP/1.1 keep-alive client over one asyncio connection."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, token: str, body: dict[str, Any] | None = None
    ) -> Reply:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        payload = b"" if body is None else _encode(body)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self._writer.write(head.encode() + payload)
        status_line, *headers = (await self._reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        length = 0
        for header in headers:
            name, _, value = header.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        content = await self._reader.readexactly(length) if length else b""
        return Reply(int(status_line.split()[1]), content)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class Recorder:
    def __init__(self) -> None:
        self.started_at = 0.0
        self.stop_at = 0.0
        self.command_ms: list[float] = []
        self.read_ms: list[float] = []
        self.refused: dict[int, int] = {}
        self.matches_finished = 0
        self.server_cpu_s = 0.0
        self.client_cpu_s = 0.0
        self.database_cpu_s = 0.0

    def measuring(self, at: float) -> bool:
        return self.started_at <= at < self.stop_at


async def _timed(rec: Recorder, into: list[float], call: Any) -> Any:
    t0 = time.perf_counter()
    response = await call
    t1 = time.perf_counter()
    if rec.measuring(t0) and response.status_code == 200:
        into.append((t1 - t0) * 1000)
    elif rec.measuring(t0):
        rec.refused[response.status_code] = rec.refused.get(response.status_code, 0) + 1
    return response


class Table(msgspec.Struct, kw_only=True):
    """Two players of the bench ladder and the match they play now."""

    ladder: str
    organiser: str
    players: tuple[str, str]
    tokens: tuple[str, str]
    match_id: str = ""


async def _retrying(call: Any) -> httpx.Response:
    """Setup calls are retried: a busy shared machine sometimes drops a connection."""
    for attempt in range(5):
        try:
            response: httpx.Response = await call()
            response.raise_for_status()
            return response
        except httpx.TransportError:
            if attempt == 4:
                raise
            await asyncio.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


async def _new_match(client: httpx.AsyncClient, table: Table) -> None:
    r = await _retrying(
        lambda: client.post(
            f"/api/ladders/{table.ladder}/matches",
            json={"players": list(table.players)},
            headers={"Authorization": f"Bearer {table.organiser}"},
        )
    )
    table.match_id = r.json()["match_id"]


async def _setup(client: httpx.AsyncClient, matches: int) -> list[Table]:
    """An organiser, a ladder, 2 x ``matches`` members, and a match for each pair."""
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    gate = asyncio.Semaphore(10)

    async def register() -> tuple[str, str]:
        async with gate:
            name = f"b-{uuid.uuid4().hex[:10]}"
            r = await _retrying(lambda: client.post("/api/players", json={"name": name}))
        body = r.json()
        return body["id"], body["token"]

    async def join(ladder: str, token: str) -> None:
        async with gate:
            await _retrying(
                lambda: client.post(
                    f"/api/ladders/{ladder}/members", headers={"Authorization": f"Bearer {token}"}
                )
            )

    org_id, org_token = await register()
    await _retrying(
        lambda: client.post(
            f"/api/admin/players/{org_id}/roles", json={"roles": ["organiser"]}, headers=admin
        )
    )
    r = await _retrying(
        lambda: client.post(
            "/api/ladders",
            json={"name": f"bench-{uuid.uuid4().hex[:8]}"},
            headers={"Authorization": f"Bearer {org_token}"},
        )
    )
    ladder = r.json()["id"]
    players = await asyncio.gather(*(register() for _ in range(2 * matches)))
    await asyncio.gather(*(join(ladder, token) for _, token in players))
    tables = [
        Table(
            ladder=ladder,
            organiser=org_token,
            players=(players[2 * i][0], players[2 * i + 1][0]),
            tokens=(players[2 * i][1], players[2 * i + 1][1]),
        )
        for i in range(matches)
    ]
    for table in tables:
        await _new_match(client, table)
    return tables


async def _play(client: httpx.AsyncClient, rec: Recorder, table: Table, rng: random.Random) -> None:
    """Play this table's match to its end, or until time is up."""
    match_id, tokens = table.match_id, table.tokens
    bots = (random_bot, heuristic_bot)
    raw = Http11(client.base_url.host, client.base_url.port or 80) if CLIENT == "raw" else None

    async def call(method: str, path: str, seat: int, body: dict[str, Any] | None = None) -> Any:
        if raw is not None:
            return await raw.request(method, path, tokens[seat], body)
        headers = {"Authorization": f"Bearer {tokens[seat]}"}
        if method == "GET":
            return await client.get(path, headers=headers)
        return await client.post(path, json=body, headers=headers)

    try:
        views = [
            _decode((await call("GET", f"/api/matches/{match_id}", s)).content) for s in (0, 1)
        ]
        await asyncio.sleep(rng.random() * THINK_MS / 1000)  # spread the start
        while time.perf_counter() < rec.stop_at:
            if views[0]["result"] is not None:
                rec.matches_finished += 1
                return
            moved = False
            for seat in (0, 1):
                request = bot_request(views[seat], bots[seat], rng)
                if request is None:
                    continue
                route, body = request
                body["expected_version"] = views[seat]["version"]
                r = await _timed(
                    rec,
                    rec.command_ms,
                    call("POST", f"/api/matches/{match_id}/{route}", seat, body),
                )
                if r.status_code == 200:
                    views[seat] = _decode(r.content)["view"]
                other = 1 - seat
                mine = views[seat]
                if mine["result"] is not None:
                    views[other] = mine  # over: only "result" is read from here on
                elif (
                    mine["to_move"] == other
                    or mine["seats"][other]["must_keep"]
                    or r.status_code != 200
                ):
                    # The opponent has something to do: it reads its own fresh view.
                    r = await _timed(
                        rec, rec.read_ms, call("GET", f"/api/matches/{match_id}", other)
                    )
                    views[other] = _decode(r.content)
                moved = True
                if THINK_MS:
                    await asyncio.sleep(THINK_MS / 1000)
                break
            if not moved:
                raise RuntimeError(f"nobody can move in match {match_id}")
    finally:
        if raw is not None:
            await raw.close()


def _cpu_seconds(pid: int) -> float:
    """CPU time of a process and its children (the uvicorn workers)."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _database_cpu_seconds(dbname: str) -> dict[int, float]:
    """CPU time of each PostgreSQL backend serving ``dbname`` (its title names the
    database), by pid; backends are pooled, so the same ones live through the run."""
    import psutil

    found: dict[int, float] = {}
    for proc in psutil.process_iter(["cmdline"]):
        title = " ".join(proc.info["cmdline"] or ())
        if title.startswith("postgres:") and f" {dbname} " in title:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            found[proc.pid] = times.user + times.system
    return found


async def _measure_cpu(rec: Recorder, server_pid: int, dbname: str) -> None:
    await asyncio.sleep(max(0.0, rec.started_at - time.perf_counter()))
    server0, client0 = _cpu_seconds(server_pid), time.process_time()
    database0 = _database_cpu_seconds(dbname)
    await asyncio.sleep(max(0.0, rec.stop_at - time.perf_counter()))
    rec.server_cpu_s = _cpu_seconds(server_pid) - server0
    rec.client_cpu_s = time.process_time() - client0
    database1 = _database_cpu_seconds(dbname)
    rec.database_cpu_s = sum(t - database0.get(pid, 0.0) for pid, t in database1.items())


async def _drive(base_url: str, server_pid: int, dbname: str) -> Recorder:
    limits = httpx.Limits(max_connections=MATCHES * 2, max_keepalive_connections=MATCHES * 2)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:
        tables = await _setup(client, MATCHES)
        rec = Recorder()
        now = time.perf_counter()
        rec.started_at = now + WARMUP_S
        rec.stop_at = rec.started_at + SECONDS

        async def lane(i: int) -> None:
            # A finished match is followed by a new one of the same two players,
            # so MATCHES matches stay in play for the whole run.
            rng = random.Random(i)
            await _play(client, rec, tables[i], rng)
            while time.perf_counter() < rec.stop_at:
                await _new_match(client, tables[i])
                await _play(client, rec, tables[i], rng)

        await asyncio.gather(
            _measure_cpu(rec, server_pid, dbname), *(lane(i) for i in range(len(tables)))
        )
    return rec


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _wait_until_up(base_url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the API process exited during start")
        try:
            if httpx.get(base_url + "/api/ladders", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the API did not start within 60 s")


def main() -> dict[str, object]:
    server_url = os.environ.get(
        "MATCHA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    name = f"matcha_bench_api_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = with_database(server_url, name)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    proc: subprocess.Popen[bytes] | None = None
    try:
        apply_migrations(url)
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "REDIS_URL": os.environ.get("MATCHA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
            "MATCHA_REDIS_PREFIX": f"bench{uuid.uuid4().hex[:8]}",
            "MATCHA_ADMIN_TOKEN": ADMIN_TOKEN,
            "MATCHA_MIGRATE_ON_START": "0",
            "MATCHA_LOG_LEVEL": "WARNING",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "service.api.app:create_app",
             "--host", "127.0.0.1", "--port", str(port), "--workers", str(WORKERS),
             "--http", PROTOCOL, "--no-access-log", "--log-level", "warning"],
            env=env,
        )  # fmt: skip
        _wait_until_up(base_url, proc)
        rec = asyncio.run(_drive(base_url, proc.pid, name))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    commands = len(rec.command_ms)
    result: dict[str, object] = {
        "matches_in_play": MATCHES,
        "api_workers": WORKERS,
        "think_ms": THINK_MS,
        "client": CLIENT,
        "seconds": SECONDS,
        "commands_per_s": round(commands / SECONDS, 1),
        "command_p50_ms": round(_percentile(rec.command_ms, 0.50), 2),
        "command_p99_ms": round(_percentile(rec.command_ms, 0.99), 2),
        "reads_per_s": round(len(rec.read_ms) / SECONDS, 1),
        "read_p99_ms": round(_percentile(rec.read_ms, 0.99), 2),
        "refused": {str(k): v for k, v in sorted(rec.refused.items())},
        "matches_finished": rec.matches_finished,
        "server_cpu_ms_per_command": round(rec.server_cpu_s * 1000 / max(commands, 1), 2),
        "client_cpu_ms_per_command": round(rec.client_cpu_s * 1000 / max(commands, 1), 2),
        "database_cpu_ms_per_command": round(rec.database_cpu_s * 1000 / max(commands, 1), 2),
        "cpu_ms_per_command_note": "per accepted command, including its share of view reads"
        " (about one read per command); database: the PostgreSQL backends of the bench's"
        " database (not the WAL writer or checkpointer)",
        "goal": {"commands_per_s": 1000, "command_p99_ms": 25},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "note": "the machine is shared: load_average_1m_at_end > cores means other work ran",
    }
    print(
        f"HTTP API: {MATCHES} matches at once, uvicorn x{WORKERS}, think {THINK_MS:g} ms,"
        f" client {CLIENT}"
    )
    print(f"{'':22}{'per s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    print(f"{'commands (accepted)':22}{result['commands_per_s']:>10}"
          f"{result['command_p50_ms']:>10}{result['command_p99_ms']:>10}")  # fmt: skip
    print(f"{'view reads':22}{result['reads_per_s']:>10}{'':>10}{result['read_p99_ms']:>10}")
    print(f"refused: {result['refused']}  matches finished: {rec.matches_finished}")
    print(f"CPU per accepted command: server {result['server_cpu_ms_per_command']} ms,"
          f" PostgreSQL {result['database_cpu_ms_per_command']} ms,"
          f" client {result['client_cpu_ms_per_command']} ms")  # fmt: skip
    print(f"load average at the end: {result['load_average_1m_at_end']} on {os.cpu_count()} cores")
    print("goal: commands_per_s >= 1000 with command_p99_ms <= 25")
    merge_results(RESULTS, result)
    return result


if __name__ == "__main__":
    main()
