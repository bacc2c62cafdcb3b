"""Instructions per socket command of the API's workers, under callgrind.

Why: on the shared 2-core machine the CPU time of a command moves with the other
work (a closed loop's server CPU per command read 1.8 to 3.7 ms for one build),
while the instructions it executes do not. This runs the API as ``python -m
bench api`` does (uvicorn x $MATCHA_BENCH_API_WORKERS, a throwaway database,
Redis), each process under ``valgrind --tool=callgrind``; once the matches are
set up and both seats' sockets are open it zeroes the counts, plays a closed
loop of socket commands for $MATCHA_BENCH_CG_SECONDS (default 60) over
$MATCHA_BENCH_CG_MATCHES matches (default 20), dumps, and prints the
instructions of the API's processes divided by the commands accepted (the
opponent's view and the frames to both seats included, as in the bench).
PostgreSQL is not counted. Which worker each socket lands on is the kernel's
choice, so a run's mix of matches split across the workers varies a little.

    .venv/bin/python -m bench.callgrind_socket
"""

from __future__ import annotations

import asyncio
import glob
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid

import httpx
import psycopg

from bench import bench_api as api
from service.api.http_protocol import PROTOCOL
from service.embedded import free_port
from service.store.db import with_database
from service.store.migrate import apply_migrations

MATCHES = int(os.environ.get("MATCHA_BENCH_CG_MATCHES", "20"))
SECONDS = float(os.environ.get("MATCHA_BENCH_CG_SECONDS", "60"))


def _tree(pid: int) -> list[str]:
    """``pid`` and its descendants (callgrind_control is told only ours: other work on
    the machine may run callgrind too)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(str(current))
        for child in glob.glob(f"/proc/{current}/task/*/children"):
            with open(child) as f:
                todo += [int(c) for c in f.read().split()]
    return out


def _control(pid: int, *args: str) -> None:
    done = subprocess.run(
        ["callgrind_control", *args, *_tree(pid)], check=False, capture_output=True, text=True
    )
    if os.environ.get("MATCHA_BENCH_CG_VERBOSE"):
        print(done.stdout, done.stderr)


def _totals(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return 0


async def _drive(base_url: str, out_dir: str, pid: int) -> tuple[int, int]:
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:
        host, port = client.base_url.host, client.base_url.port or 80
        tables = await api._setup(client, MATCHES)
        games: list[api.Game] = [
            api.SocketGame(t, random.Random(i), host, port) for i, t in enumerate(tables)
        ]
        for game in games:
            await game.open()
        rec = api.PhaseRecord()
        _control(pid, "--zero")
        rec.started_at = time.perf_counter()
        rec.stop_at = rec.started_at + SECONDS
        await api._closed_loop(client, games, rec)
        before = set(glob.glob(f"{out_dir}/callgrind.out.*"))
        _control(pid, "--dump")
        dumps: set[str] = set()
        for _ in range(60):  # each process writes its dump when it next runs
            await asyncio.sleep(1)
            dumps = set(glob.glob(f"{out_dir}/callgrind.out.*")) - before
            if len(dumps) >= len(_tree(pid)):
                break
        for game in games:
            await game.close()
    for path in sorted(dumps):
        print(f"  {os.path.basename(path)}: {_totals(path):,} instructions")
    return rec.completed, sum(_totals(p) for p in dumps)


def main() -> None:
    server_url = os.environ.get(
        "MATCHA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    name = f"matcha_bench_cg_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    out_dir = tempfile.mkdtemp(prefix="matcha-callgrind-")
    port = free_port()
    proc = None
    try:
        url = with_database(server_url, name)
        apply_migrations(url)
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "REDIS_URL": os.environ.get("MATCHA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
            "MATCHA_REDIS_PREFIX": f"benchcg{uuid.uuid4().hex[:8]}",
            "MATCHA_ADMIN_TOKEN": api.ADMIN_TOKEN,
            "MATCHA_MIGRATE_ON_START": "0",
            "MATCHA_LOG_LEVEL": "WARNING",
        }
        proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--trace-children=yes", "--instr-atstart=yes",
             f"--callgrind-out-file={out_dir}/callgrind.out.%p",
             sys.executable, "-m", "uvicorn", "--factory", "service.app:create_app",
             "--host", "127.0.0.1", "--port", str(port), "--workers", str(api.WORKERS),
             "--http", PROTOCOL, "--no-access-log", "--log-level", "warning",
             # a worker under callgrind answers the supervisor's ping late: not a hang
             "--timeout-worker-healthcheck", "600"],
            env=env, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 600
        while time.time() < deadline:
            try:
                if httpx.get(base_url + "/api/ladders", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        commands, instructions = asyncio.run(_drive(base_url, out_dir, proc.pid))
        per = instructions / max(commands, 1)
        print(
            f"socket commands accepted: {commands}; instructions of the API processes:"
            f" {instructions:,}; per command: {per / 1e6:.2f} M"
            f" ({api.WORKERS} workers, {MATCHES} matches, {SECONDS:g} s under callgrind)"
        )
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for path in glob.glob(f"{out_dir}/callgrind.out.*"):
            os.unlink(path)
        os.rmdir(out_dir)


if __name__ == "__main__":
    main()
