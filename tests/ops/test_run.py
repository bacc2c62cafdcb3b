"""`matcha run` on a bare machine: real servers, data kept between runs, nothing left behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
import redis

from service.store.db import scratch_database, with_database

from .run_harness import MatchaRun, start_matcha_run, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


@pytest.fixture
def runs() -> Iterator[list[MatchaRun]]:
    started: list[MatchaRun] = []
    yield started
    for run in started:
        run.kill_all()


def _cmdline(process: psutil.Process) -> str:
    """A process's command line ("" for one that is gone or a zombie not yet reaped)."""
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _names(processes: list) -> set[str]:
    return {" ".join(p.cmdline()) for p in processes}


def test_a_fresh_machine_gets_real_servers_kept_between_runs_and_ctrl_c_stops_everything(
    tmp_path: Path, runs: list[MatchaRun]
) -> None:
    data = tmp_path / "var"
    first = start_matcha_run(data)
    runs.append(first)

    # Real servers, each a child of `matcha run`, plus the API.
    children = first.descendants()
    commands = _names(children)
    assert any("bin/postgres" in c for c in commands), commands
    assert any("redis-server" in c for c in commands), commands
    assert any("uvicorn" in c for c in commands), commands
    assert any("service.cli worker" in c for c in commands), commands
    assert first.banner["Worker"].startswith("matcha worker (pid")
    assert "(embedded" in first.banner["PostgreSQL"]
    assert "(embedded" in first.banner["Redis"]
    assert first.get("/healthz").status_code == 200
    ready = first.get("/readyz")
    assert ready.status_code == 200, ready.text

    # A second `matcha run` on the same folder is refused and harms nothing.
    clash = subprocess.run(
        [sys.executable, "-m", "service.cli", "run", "--data-dir", str(data), "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert clash.returncode != 0
    assert "in use by another `matcha run`" in clash.stderr
    assert first.get("/readyz").status_code == 200
    assert all(p.is_running() for p in children)

    # The admin token is generated once, kept in the data folder, and works.
    token = first.banner["Admin token"]
    assert (data / "admin-token").read_text().strip() == token
    player = first.post("/api/players", json={"name": f"ada-{uuid.uuid4().hex[:6]}"})
    assert player.status_code == 201, player.text
    promoted = first.post(
        f"/api/admin/players/{player.json()['id']}/roles",
        json={"roles": ["organiser"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert promoted.status_code == 200, promoted.text
    redis_url = first.banner["Redis"].split()[0]
    redis.Redis.from_url(redis_url).set("ops-test:kept", b"between runs")

    # Ctrl-C: everything it started stops, servers included, and it exits cleanly.
    assert first.stop(signal.SIGINT) == 0, first.logs()[-3000:]
    assert wait_gone(children) == [], _names(wait_gone(children))
    assert "everything stopped" in first.logs()

    # A second run (stopped with SIGTERM this time) finds the same data and token.
    second = start_matcha_run(data)
    runs.append(second)
    assert second.banner["Admin token"] == token
    assert second.banner["Redis"].split()[0] == redis_url, "the embedded Redis keeps its port"
    me = second.get("/api/me", headers={"Authorization": f"Bearer {player.json()['token']}"})
    assert me.status_code == 200, me.text
    assert me.json()["name"] == player.json()["name"]
    assert redis.Redis.from_url(redis_url).get("ops-test:kept") == b"between runs"
    children = second.descendants()
    assert second.stop(signal.SIGTERM) == 0
    assert wait_gone(children) == []


def test_existing_servers_are_used_when_their_urls_are_set(
    tmp_path: Path, runs: list[MatchaRun], pg_server_url: str, redis_server_url: str
) -> None:
    with scratch_database(pg_server_url, "ops_run_") as name:
        database_url = with_database(pg_server_url, name)
        run = start_matcha_run(
            tmp_path / "var",
            env={
                "DATABASE_URL": database_url,
                "REDIS_URL": redis_server_url,
                "MATCHA_ADMIN_TOKEN": "given-admin-token-" + "y" * 20,
            },
        )
        runs.append(run)
        assert "(DATABASE_URL)" in run.banner["PostgreSQL"]
        assert "(REDIS_URL)" in run.banner["Redis"]
        assert run.banner["Admin token"] == "given-admin-token-" + "y" * 20
        commands = _names(run.descendants())
        assert not any("bin/postgres" in c or "redis-server" in c for c in commands), commands
        assert not (tmp_path / "var" / "postgres").exists()
        assert not (tmp_path / "var" / "admin-token").exists()
        with psycopg.connect(database_url) as conn:
            applied = conn.execute("SELECT count(*) FROM _yoyo_migration").fetchone()
        assert applied is not None and applied[0] >= 1, "migrations ran on the given server"
        assert run.get("/readyz").status_code == 200
        children = run.descendants()
        assert run.stop(signal.SIGINT) == 0
        assert wait_gone(children) == []


def test_a_killed_matcha_run_takes_its_servers_with_it(
    tmp_path: Path, runs: list[MatchaRun]
) -> None:
    run = start_matcha_run(tmp_path / "var")
    runs.append(run)
    children = run.descendants()
    assert children
    run.proc.kill()  # no chance to clean up: the kernel tells each child its parent died
    run.proc.wait()
    assert wait_gone(children, timeout=60) == []


def test_a_server_that_will_not_start_is_reported_and_nothing_is_left_running(
    tmp_path: Path,
) -> None:
    data = tmp_path / "var"
    (data / "postgres").mkdir(parents=True)
    (data / "postgres" / "PG_VERSION").write_text("7\n")  # a cluster no server can open
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "run", "--data-dir", str(data), "--port", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "PostgreSQL exited" in done.stderr
    assert "Traceback" not in done.stderr
    assert "everything stopped" in done.stderr
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(str(data) in part for part in (p.info["cmdline"] or []))
    ]
    assert leftovers == []


def test_a_child_that_dies_is_started_again_and_the_api_never_goes_down(
    tmp_path: Path, runs: list[MatchaRun], pg_server_url: str, redis_server_url: str
) -> None:
    import time

    with scratch_database(pg_server_url, "ops_run_") as name:
        run = start_matcha_run(
            tmp_path / "var",
            env={
                "DATABASE_URL": with_database(pg_server_url, name),
                "REDIS_URL": redis_server_url,
                "MATCHA_ADMIN_TOKEN": "given-admin-token-" + "r" * 20,
            },
        )
        runs.append(run)
        worker_pid, api_pid = run.pid_of("Worker"), run.pid_of("API")
        psutil.Process(worker_pid).kill()  # the worker dies under it

        # The API never notices: it answers all along, and the worker comes back.
        deadline = time.monotonic() + 30
        while True:
            assert run.get("/healthz").status_code == 200
            assert run.proc.poll() is None, run.logs()[-3000:]
            workers = [p for p in run.descendants() if "service.cli worker" in _cmdline(p)]
            if any(p.pid != worker_pid for p in workers):
                break
            assert time.monotonic() < deadline, run.logs()[-3000:]
            time.sleep(0.1)
        assert psutil.Process(api_pid).is_running()
        assert "the worker exited with code -9" in run.logs()
        assert "worker started again" in run.logs()

        # And a stop is bounded: everything it started is gone within its deadline.
        children = run.descendants()
        started = time.monotonic()
        assert run.stop(signal.SIGTERM, timeout=60) == 0
        assert time.monotonic() - started <= 12.0, run.logs()[-3000:]
        assert wait_gone(children) == []
