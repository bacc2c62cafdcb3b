"""Scale-out: two API processes and one worker on one PostgreSQL and one Redis.

A match is played through API process A and watched (Server-Sent Events)
through API process B; the ratings and the replay archive are produced by the
worker process and read back through B. B's periodic check against the store
is pushed out of reach (10 minutes), so the moves can only reach B in time
through Redis pub/sub: the fan-out across processes is what is tested.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness import Api, play_out

from service.embedded import free_port
from service.store.db import scratch_database, with_database
from service.store.migrate import apply_migrations

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ADMIN_TOKEN = "multiprocess-admin-" + "q" * 24
WATCH_DEADLINE_S = 60.0


class Processes:
    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.logs / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                argv,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                process_group=0,
            )
        self.running.append((name, proc))
        return proc

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-4000:]

    def stop_all(self) -> None:
        for _, proc in self.running:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _, proc in self.running:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def shared_database(pg_server_url: str) -> Iterator[str]:
    """A migrated database of this test's own; the processes log in as `matcha_app`."""
    with scratch_database(pg_server_url, "ops_mp_") as name:
        apply_migrations(with_database(pg_server_url, name))
        yield with_database(pg_server_url, name, user="matcha_app")


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    running = Processes(tmp_path)
    yield running
    running.stop_all()


def _wait_ready(base: str, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{what} exited"
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what} never became ready")


async def _watch(
    base: str,
    match_id: str,
    token: str,
    seen: list[int],
    ended: asyncio.Event,
    final: dict[str, int],
) -> None:
    """Follow the match's SSE stream on `base`, recording each event id (version)."""
    async with (
        httpx.AsyncClient(base_url=base, timeout=None) as client,
        client.stream(
            "GET", f"/api/matches/{match_id}/stream", params={"token": token, "since": "0"}
        ) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                seen.append(int(line[3:].strip()))
                if "version" in final and seen[-1] >= final["version"]:
                    ended.set()
                    return


def test_a_match_played_on_one_process_is_watched_on_another_and_the_worker_rates_it(
    shared_database: str, redis_server_url: str, redis_prefix: str, processes: Processes
) -> None:
    from service.cli import COMMANDS

    if "worker" not in COMMANDS:
        pytest.fail("`matcha worker` is not registered in service.cli.COMMANDS")
    env = {
        **os.environ,
        "DATABASE_URL": shared_database,
        "REDIS_URL": redis_server_url,
        "MATCHA_REDIS_PREFIX": redis_prefix,
        "MATCHA_ADMIN_TOKEN": ADMIN_TOKEN,
        "MATCHA_MIGRATE_ON_START": "0",
        "MATCHA_LOG_LEVEL": "INFO",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    ports = {"a": free_port(), "b": free_port()}
    apis = {}
    for name, port in ports.items():
        # B only learns of moves through Redis: its store check is 10 minutes away.
        extra = {"MATCHA_LIVE_CHECK_S": "600"} if name == "b" else {}
        apis[name] = processes.start(
            f"api-{name}",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "service.app:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            {**env, **extra},
        )
    worker = processes.start("worker", [sys.executable, "-m", "service.cli", "worker"], env)
    a, b = (f"http://127.0.0.1:{ports[n]}" for n in ("a", "b"))
    for name, base in (("a", a), ("b", b)):
        _wait_ready(base, apis[name], f"API {name}")

    async def scenario() -> tuple[str, str, dict, list[int], int]:
        async with httpx.AsyncClient(base_url=a, timeout=30) as client_a:
            api = Api(client_a, ADMIN_TOKEN)
            ladder_id, match_id, seat0, seat1 = await api.new_ladder_match()
            start_version = (await api.view(match_id, seat1))["version"]
            seen: list[int] = []
            ended = asyncio.Event()
            final_version: dict[str, int] = {}
            watcher = asyncio.create_task(
                _watch(b, match_id, seat1.token, seen, ended, final_version)
            )
            # B has subscribed before the first move: its stream (which subscribes,
            # then catches up) has sent the match as it stands
            deadline = time.monotonic() + 30
            while not seen or seen[-1] < start_version:
                assert time.monotonic() < deadline, "B's stream never caught up"
                assert not watcher.done(), "B's stream ended"
                await asyncio.sleep(0.02)
            final = await play_out(api, match_id, (seat0, seat1), random.Random(11))
            final_version["version"] = final["version"]
            if seen and seen[-1] >= final["version"]:
                ended.set()
            try:
                await asyncio.wait_for(ended.wait(), WATCH_DEADLINE_S)
            finally:
                watcher.cancel()
            return ladder_id, match_id, final, seen, start_version

    ladder_id, match_id, final, seen, start_version = asyncio.run(scenario())
    assert final["result"] is not None
    # B delivered every version of the match, once each, in order.
    assert seen == list(range(seen[0], final["version"] + 1))
    assert seen[0] <= start_version + 1

    # The worker, a third process, rates the ladder and archives the replay; B serves both.
    deadline = time.monotonic() + 90
    board: dict = {}
    replay = None
    while time.monotonic() < deadline:
        assert worker.poll() is None, processes.log("worker")
        board = httpx.get(f"{b}/api/ladders/{ladder_id}/leaderboard", timeout=10).json()
        replay = httpx.get(f"{b}/api/matches/{match_id}/replay", timeout=10)
        if board.get("matches", 0) >= 1 and replay.status_code == 200:
            break
        time.sleep(0.5)
    assert board.get("matches", 0) >= 1, (board, processes.log("worker"))
    assert {s["games"] for s in board["standings"]} == {1}
    assert len(board["standings"]) == 2
    assert replay is not None and replay.status_code == 200, processes.log("worker")
    assert replay.json()["frames"] >= 1
    assert replay.json()["summary"][-1]["version"] == final["version"]
