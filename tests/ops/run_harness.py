"""Drives `matcha run` as a real subprocess, the way a person at a terminal does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from service.embedded import free_port

_BANNER_DONE = "Matcha is running"
_BANNER_LINES = {"PostgreSQL", "Redis", "Migrations", "Worker", "API", "Admin token", "Data"}
# Variables that would make `matcha run` use other servers or another token than the test says.
_SCRUBBED = (
    "DATABASE_URL",
    "REDIS_URL",
    "MATCHA_ADMIN_TOKEN",
    "PROMETHEUS_MULTIPROC_DIR",
    "MATCHA_PORT",
    "MATCHA_HOST",
    "MATCHA_DATA_DIR",
)


@dataclass
class MatchaRun:
    proc: subprocess.Popen[bytes]
    data_dir: Path
    port: int
    out: Path
    err: Path
    banner: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def logs(self) -> str:
        return self.err.read_text(errors="replace")

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def pid_of(self, line: str) -> int:
        found = re.search(r"pid (\d+)", self.banner[line])
        assert found, self.banner[line]
        return int(found.group(1))

    def get(self, path: str, **kwargs: object) -> httpx.Response:
        return httpx.get(self.base + path, timeout=10, **kwargs)  # type: ignore[arg-type]

    def post(self, path: str, **kwargs: object) -> httpx.Response:
        return httpx.post(self.base + path, timeout=10, **kwargs)  # type: ignore[arg-type]

    def stop(self, sig: int = signal.SIGINT, timeout: float = 90) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def kill_all(self) -> None:
        """Last resort for a failed test: never leave servers behind."""
        if self.proc.poll() is None:
            for child in self.descendants():
                child.kill()
            self.proc.kill()
            self.proc.wait()


def start_matcha_run(
    data_dir: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    extra_args: tuple[str, ...] = (),
) -> MatchaRun:
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    out = data_dir.parent / f"{data_dir.name}-{port}.out"
    err = data_dir.parent / f"{data_dir.name}-{port}.err"
    child_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    child_env.update(env or {})
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "run",
                "--data-dir",
                str(data_dir),
                "--port",
                str(port),
                *extra_args,
            ],
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=child_env,
        )
    run = MatchaRun(proc, data_dir, port, out, err)
    deadline = time.monotonic() + timeout
    while _BANNER_DONE not in run.output():
        if proc.poll() is not None:
            raise AssertionError(
                f"matcha run exited with {proc.returncode}:\n{run.output()}\n{run.logs()[-4000:]}"
            )
        if time.monotonic() > deadline:
            run.kill_all()
            raise AssertionError(f"matcha run did not start:\n{run.output()}\n{run.logs()[-4000:]}")
        time.sleep(0.2)
    for line in run.output().splitlines():
        name, _, value = line.partition(":")
        if name in _BANNER_LINES:
            run.banner[name] = value.strip()
    return run


def wait_gone(processes: list[psutil.Process], timeout: float = 30) -> list[psutil.Process]:
    """The processes still alive after `timeout` (zombies count as gone)."""
    deadline = time.monotonic() + timeout
    alive = processes
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.1)
    return alive


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
