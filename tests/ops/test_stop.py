"""A stop is a stop: SIGTERM ends the API with 50 viewers open, and a worker in
the middle of a job, each within 10 s, and every viewer is told to reconnect."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from harness import Api
from rq.job import Job
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from service.broker.jobs import queue, redis_client
from service.embedded import free_port

from .processes import ADMIN_TOKEN, Service, service_database, service_env, wait_for, wait_ready

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

STOP_WITHIN_S = 10.0
VIEWERS = 50


@pytest.fixture
def databases(pg_server_url: str) -> Iterator[tuple[str, str]]:
    with service_database(pg_server_url) as urls:
        yield urls


@pytest.fixture
def service(
    tmp_path: Path, databases: tuple[str, str], redis_server_url: str, redis_prefix: str
) -> Iterator[Service]:
    running = Service(tmp_path, service_env(databases[0], redis_server_url, redis_prefix))
    yield running
    running.stop_all()


class Sse:
    """An SSE viewer that keeps every line until the server ends the stream."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lines: list[str] = []
        self.status: int | None = None
        self.ended = asyncio.Event()

    async def run(self) -> None:
        try:
            async with (
                httpx.AsyncClient(timeout=httpx.Timeout(60)) as client,
                client.stream("GET", self.url) as response,
            ):
                self.status = response.status_code
                async for line in response.aiter_lines():
                    self.lines.append(line)
        except httpx.HTTPError as exc:
            self.lines.append(f"!error {type(exc).__name__}")
        finally:
            self.ended.set()

    def last_message(self) -> dict[str, str]:
        """The fields of the last complete message before the stream ended."""
        messages: list[dict[str, str]] = []
        current: dict[str, str] = {}
        for line in self.lines:
            if line == "":
                if current:
                    messages.append(current)
                current = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                current[name] = value.strip()
        return messages[-1] if messages else {}


class Ws:
    """A WebSocket viewer that records how the server closed it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.code: int | None = None
        self.reason = ""
        self.frames = 0
        self.open = asyncio.Event()
        self.ended = asyncio.Event()

    async def run(self) -> None:
        try:
            async with connect(self.url, ping_interval=None, open_timeout=20) as ws:
                await ws.send(json.dumps({"kind": "hello"}))
                self.open.set()
                try:
                    async for _ in ws:
                        self.frames += 1
                except ConnectionClosed:
                    pass
                self.code, self.reason = ws.close_code, ws.close_reason or ""
        finally:
            self.open.set()
            self.ended.set()


def _live_connections(base: str) -> float:
    text = httpx.get(f"{base}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith("matcha_live_connections"):
            return float(line.split()[-1])
    return 0.0


def test_sigterm_with_50_viewers_ends_every_stream_and_the_process_within_10_s(
    service: Service,
) -> None:
    port = free_port()
    base, ws_base = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}"
    api_proc = service.api("api", port)
    wait_ready(base, api_proc, "the API")

    async def scenario() -> tuple[list[Sse], list[Ws], float]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            _, match_id, _, _ = await Api(client, ADMIN_TOKEN).new_ladder_match("duel")
        sse = [Sse(f"{base}/api/matches/{match_id}/stream") for _ in range(20)]
        sse += [Sse(f"{base}/api/lobby/stream") for _ in range(5)]
        ws = [Ws(f"{ws_base}/api/matches/{match_id}/ws") for _ in range(20)]
        ws += [Ws(f"{ws_base}/api/lobby/ws") for _ in range(5)]
        tasks = [asyncio.create_task(v.run()) for v in (*sse, *ws)]
        try:
            # Every viewer is being served before the stop: the server counts them.
            deadline = time.monotonic() + 60
            while await asyncio.to_thread(_live_connections, base) < VIEWERS:
                assert time.monotonic() < deadline, "the viewers never all connected"
                assert not any(t.done() for t in tasks), "a viewer ended before the stop"
                await asyncio.sleep(0.2)
            started = time.monotonic()
            api_proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(asyncio.to_thread(api_proc.wait), STOP_WITHIN_S + 5)
            took = time.monotonic() - started
            await asyncio.wait_for(asyncio.gather(*(v.ended.wait() for v in (*sse, *ws))), 10)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return sse, ws, took

    sse, ws, took = asyncio.run(scenario())
    log = service.log("api")
    assert took <= STOP_WITHIN_S, f"the API took {took:.1f} s to stop\n{log}"
    assert "did not stop within" not in log, log  # it ended by itself, not by its watchdog
    for viewer in ws:  # every WebSocket got a close that says: reconnect, elsewhere
        assert viewer.code in (1001, 1012), (viewer.code, viewer.reason)
    for viewer in sse:  # every stream ended with a last message: a retry hint
        assert viewer.status == 200
        last = viewer.last_message()
        assert last.get("event") == "restart" and last.get("retry") == "1000", viewer.lines[-6:]
    match_streams = [v for v in sse if "/matches/" in v.url]
    assert all(v.last_message()["data"].startswith("since=") for v in match_streams)
    assert sum(v.code == 1012 and "since=" in v.reason for v in ws) >= 1


def test_sigterm_stops_a_worker_in_the_middle_of_a_job_within_10_s_and_the_job_runs_again(
    service: Service, databases: tuple[str, str], redis_server_url: str, redis_prefix: str
) -> None:
    app_url, _ = databases
    with psycopg.connect(app_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO players (id, name, roles, token_hash) VALUES"
            " ('org', 'org', '{organiser}', '\\x00')"
        )
        conn.execute(
            "INSERT INTO ladders (id, name, ruleset, rating, created_by)"
            " VALUES ('slow', 'slow', 'standard', '{}', 'org')"
        )
    # A recompute that holds its transaction for a minute: the stop cannot wait for it.
    job: Job = queue("ratings", redis=redis_client(redis_server_url), prefix=redis_prefix).enqueue(
        "workers.ratings.update_ladder", "slow", full=True, pause_s=60.0, job_timeout=300
    )
    worker = service.worker("worker", "--poll", "1")

    def running() -> bool:
        assert worker.poll() is None, service.log("worker")
        return job.get_status(refresh=True) == "started"

    def pausing() -> bool:
        """The job holds its ladder's lock in an open transaction: inside its pause."""
        with psycopg.connect(app_url, autocommit=True) as conn:
            return (
                conn.execute(
                    "SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                    " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
                    " AND a.datname = current_database() AND a.state = 'idle in transaction'"
                    " AND ((l.classid::bigint << 32) | l.objid::bigint)"
                    "   = hashtextextended('matcha.ladder-ratings.' || 'slow', 0)"
                ).fetchone()
                is not None
            )

    wait_for(running, 60, "the job started")
    wait_for(pausing, 60, "the job is inside its pause")
    started = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    with contextlib.suppress(Exception):
        worker.wait(STOP_WITHIN_S + 5)
    took = time.monotonic() - started
    log = service.log("worker")
    assert worker.poll() is not None, f"the worker is still running\n{log}"
    assert took <= STOP_WITHIN_S, f"the worker took {took:.1f} s\n{log}"
    # Cut short, not lost: queued again for the next worker (nothing of it was committed).
    assert job.get_status(refresh=True) == "queued", log
    with psycopg.connect(app_url, autocommit=True) as conn:
        assert (
            conn.execute("SELECT 1 FROM ladder_projections WHERE ladder_id = 'slow'").fetchone()
            is None
        )
