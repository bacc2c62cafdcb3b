"""`make cluster` as a person runs it: `matcha cluster up` in the foreground, the
proxy sticky by match id over the two APIs, then `matcha cluster stop` from
another terminal, and nothing left running."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import httpx
import psutil
import pytest

from service.cluster.shape import Ports

pytestmark = [pytest.mark.proxy, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
START_WAIT_S = 180.0
DONE = "The Matcha cluster is running at"


def _upstream(client: httpx.Client, path: str) -> str:
    answer = client.get(path)
    assert answer.status_code < 500, (path, answer.status_code, answer.text[:300])
    return answer.headers["X-Matcha-Upstream"]


def test_given_make_cluster_then_requests_stick_to_one_api_per_match_and_stop_leaves_nothing(
    cluster_dir: Path,
) -> None:
    tmp_path = cluster_dir / "make-cluster"
    data = tmp_path / "cluster"
    data.mkdir(parents=True)
    ports = Ports.free()
    (data / "ports.json").write_text(json.dumps(asdict(ports)))
    out, err = tmp_path / "up.out", tmp_path / "up.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        up = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "cluster", "up", "--data-dir", str(data)],
            cwd=ROOT,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
        )
    started: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + START_WAIT_S
        while DONE not in out.read_text():
            assert up.poll() is None, f"it exited:\n{out.read_text()}\n{err.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"not up:\n{out.read_text()}\n{err.read_text()}"
            time.sleep(0.3)
        banner = out.read_text()
        started = psutil.Process(up.pid).children(recursive=True)
        # its own children (a worker's RQ scheduler is a process of that worker's)
        commands = " ".join(" ".join(p.cmdline()) for p in psutil.Process(up.pid).children())
        assert commands.count("redis-server") == 6, commands
        assert commands.count("postgresql/15/bin/postgres") == 2, commands
        assert "nginx" in commands
        assert commands.count("service.cli api") == 2 and commands.count("service.cli worker") == 2
        assert re.search(
            r"masters \d+, \d+, \d+; replicas \d+ of \d+, \d+ of \d+, \d+ of \d+", banner
        )
        proxy = f"http://127.0.0.1:{ports.proxy}"
        assert f"Proxy:         {proxy}/" in banner

        apis = {f"127.0.0.1:{p}" for p in ports.apis}
        with httpx.Client(base_url=proxy, timeout=10) as client:
            by_match = {}
            for n in range(24):
                match_id = f"match-{n}"
                paths = [
                    f"/api/matches/{match_id}",
                    f"/api/matches/{match_id}/events",
                    f"/watch/{match_id}",
                    f"/replay/{match_id}",
                ]
                served = {_upstream(client, path) for path in paths}
                assert len(served) == 1, (match_id, served)  # every route of one match: one API
                by_match[match_id] = served.pop()
            assert set(by_match.values()) == apis, "matches are spread over both APIs"
            assert _upstream(client, "/api/matches/match-3") == by_match["match-3"]
            spread = Counter(_upstream(client, "/healthz") for _ in range(8))
            assert set(spread) == apis, f"requests about no match go round robin: {spread}"

        stop = subprocess.run(
            [sys.executable, "-m", "service.cli", "cluster", "stop", "--data-dir", str(data)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert "the cluster stopped" in stop.stdout
        assert up.wait(30) == 0
        gone_by = time.monotonic() + 10
        while left := [p for p in started if p.is_running() and p.status() != "zombie"]:
            assert time.monotonic() < gone_by, [" ".join(p.cmdline()) for p in left]
            time.sleep(0.1)
        assert "everything stopped" in err.read_text()
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGKILL)
            up.wait()
        for process in started:
            if process.is_running():
                process.kill()
