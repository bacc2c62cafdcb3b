"""The service as real processes for the fault and stop tests: `matcha api`,
`matcha worker`, a Redis of the test's own (to stop and start again), a
database of the test's own. Every process is stopped at the end, killed if it
must be; every wait is bounded."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from service.embedded import EmbeddedRedis, free_port, port_is_free, start_redis
from service.store.db import scratch_database, with_database
from service.store.migrate import apply_migrations

ADMIN_TOKEN = "ops-faults-admin-" + "z" * 24


@contextlib.contextmanager
def service_database(pg_server_url: str) -> Iterator[tuple[str, str]]:
    """A migrated database of the test's own: (app role URL, superuser URL)."""
    with scratch_database(pg_server_url, "ops_faults_") as name:
        owner = with_database(pg_server_url, name)
        apply_migrations(owner)
        yield with_database(pg_server_url, name, user="matcha_app"), owner


def port_outside_the_ephemeral_range() -> int:
    """A port no outgoing connection takes while the server on it is stopped
    (tests/live/live_harness.py says why)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12000), low)
        if port_is_free(port):
            return port
    return free_port()


class OwnRedis:
    """An embedded Redis to stop and start again on the same port (never the shared one)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = port_outside_the_ephemeral_range()
        self.server: EmbeddedRedis | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        _, self.server = start_redis(self.data_dir, port=self.port, timeout=20)

    def stop(self) -> None:
        """Gone at once, as a crash or a restart takes it (SIGKILL: no goodbye to clients)."""
        if self.server is not None:
            self.server.proc.kill()
            self.server.proc.wait(10)
            self.server = None


class Service:
    """Processes a test started, each with its own log file."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self.logs = logs
        self.env = env
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], **extra_env: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, **self.env, **extra_env}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        with (self.logs / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                argv,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                process_group=0,
            )
        self.running[name] = proc
        return proc

    def api(self, name: str, port: int, **extra_env: str) -> subprocess.Popen[bytes]:
        return self.start(
            name,
            [
                sys.executable,
                "-m",
                "service.cli",
                "api",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            **extra_env,
        )

    def worker(self, name: str, *args: str, **extra_env: str) -> subprocess.Popen[bytes]:
        return self.start(name, [sys.executable, "-m", "service.cli", "worker", *args], **extra_env)

    def log(self, name: str, tail: int | None = 6000) -> str:
        text = (self.logs / f"{name}.log").read_text(errors="replace")
        return text if tail is None else text[-tail:]

    def kill(self, name: str) -> None:
        """SIGKILL to the process and its group (a worker's job processes too)."""
        proc = self.running[name]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def stop_all(self) -> None:
        for proc in self.running.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name in list(self.running):
            proc = self.running[name]
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(15)
            self.kill(name)


def service_env(database_url: str, redis_url: str, prefix: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "MATCHA_REDIS_PREFIX": prefix,
        "MATCHA_ADMIN_TOKEN": ADMIN_TOKEN,
        "MATCHA_MIGRATE_ON_START": "0",
        "MATCHA_LOG_LEVEL": "INFO",
    }


def wait_ready(base: str, proc: subprocess.Popen[bytes], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{what} exited with {proc.returncode}"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/readyz?optional=redis", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"{what} never became ready")


def wait_for(
    check: Callable[[], Any], timeout: float, what: str, alive: Callable[[], None] = lambda: None
) -> float:
    """Seconds until ``check()`` is true; ``alive()`` may fail the wait early."""
    started = time.monotonic()
    while not check():
        alive()
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.05)
    return time.monotonic() - started


def write_played_matches(owner_url: str, count: int, prefix: str = "backlog") -> list[str]:
    """``count`` whole matches two bots played through the engine, written straight
    into the events table with a valid hash chain (as the owner, by COPY: a backlog
    in a second, instead of thousands of appends)."""
    from datetime import UTC, datetime, timedelta

    import psycopg

    from schemas.rules import DUEL
    from service.bots import heuristic_bot, random_bot
    from service.engine.selfplay import play_match
    from service.store.bulk import EVENTS_COPY, copy_log

    rng = random.Random(count)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    match_ids = []
    with (
        psycopg.connect(owner_url, autocommit=True) as conn,
        conn.cursor() as cur,
        cur.copy(EVENTS_COPY) as copy,
    ):
        for i in range(count):
            match_id = f"{prefix}-{i}"
            _, log = play_match((random_bot, heuristic_bot), DUEL, rng, match_id=match_id)
            times = (start + timedelta(seconds=i * 600 + v) for v in range(1, len(log) + 1))
            copy_log(copy, match_id, log, times)
            match_ids.append(match_id)
    return match_ids
