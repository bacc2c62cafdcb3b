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
import contextlib
import os
import platform
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import psycopg

from bench.results_file import merge_results
from service.api.http_protocol import PROTOCOL
from service.bots import heuristic_bot, random_bot
from service.bots.seat_view import bot_request
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


async def _measure_cpu(rec: Recorder | PhaseRecord, server_pid: int, dbname: str) -> None:
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


# ---- both paths, side by side: capacity and open-loop latency --------------------

RATES = tuple(int(r) for r in os.environ.get("MATCHA_BENCH_RATES", "250,500,750").split(",") if r)
"""The offered rates (commands/s) of the open-loop runs."""
PATHS = tuple(
    p
    for p in os.environ.get("MATCHA_BENCH_PATHS", "http,socket,floor,floor_fanout").split(",")
    if p
)
"""Which paths the side-by-side runs take: Matcha's two (``http``, ``socket``) and
the stack's floor without and with the fan-out (``floor``, ``floor_fanout``:
``bench/floor_app.py``, its own server and database), all by default."""
FLOOR_PATHS = ("floor", "floor_fanout")
FLOOR_PATHS_RUN = any(p in FLOOR_PATHS for p in PATHS)
PHASE_S = float(os.environ.get("MATCHA_BENCH_PHASE_S", "12"))
"""How long each capacity and open-loop run is measured (after its own warm-up)."""
PHASE_WARMUP_S = float(os.environ.get("MATCHA_BENCH_PHASE_WARMUP_S", "2"))
OLD_CLOSED_LOOP = os.environ.get("MATCHA_BENCH_OLD_CLOSED_LOOP", "1") != "0"
"""Also run the first figure (100 matches, 60 ms think time, HTTP), for comparison."""


class Game:
    """One table's match as its two bots see it, driven over one path."""

    def __init__(self, table: Table, rng: random.Random) -> None:
        self.table = table
        self.rng = rng
        self.views: list[dict[str, Any]] = [{}, {}]
        self.bots = (random_bot, heuristic_bot)

    async def open(self) -> None:
        """Connect for this table's current match and read both seats' views."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def command(self, route: str, seat: int, body: dict[str, Any]) -> dict[str, Any] | None:
        """Send one command; the caller's view after it (None: refused)."""
        raise NotImplementedError

    async def read_view(self, seat: int) -> dict[str, Any]:
        raise NotImplementedError

    async def renew(self, client: httpx.AsyncClient) -> None:
        """The match is over: the same two players start a new one."""
        await self.close()
        await _new_match(client, self.table)
        await self.open()

    def next_command(self) -> tuple[int, str, dict[str, Any]]:
        for seat in (0, 1):
            request = bot_request(self.views[seat], self.bots[seat], self.rng)
            if request is not None:
                route, body = request
                body["expected_version"] = self.views[seat]["version"]
                return seat, route, body
        raise RuntimeError(f"nobody can move in match {self.table.match_id}")

    async def after(self, seat: int, view: dict[str, Any] | None) -> bool:
        """Learn what the command changed (the opponent reads its view when it has
        something to do); False when the match is over."""
        other = 1 - seat
        if view is None:  # refused: both read again
            self.views = [await self.read_view(0), await self.read_view(1)]
            return self.views[0]["result"] is None
        self.views[seat] = view
        if view["result"] is not None:
            return False
        if view["to_move"] == other or view["seats"][other]["must_keep"]:
            self.views[other] = await self.read_view(other)
        return True


class HttpGame(Game):
    """Commands as POSTs and views as GETs, over one keep-alive connection per match."""

    def __init__(self, table: Table, rng: random.Random, host: str, port: int) -> None:
        super().__init__(table, rng)
        self.http = Http11(host, port)

    async def open(self) -> None:
        self.views = [await self.read_view(0), await self.read_view(1)]

    async def close(self) -> None:
        await self.http.close()
        self.http = Http11(self.http.host, self.http.port)

    async def command(self, route: str, seat: int, body: dict[str, Any]) -> dict[str, Any] | None:
        path = f"/api/matches/{self.table.match_id}/{route}"
        r = await self.http.request("POST", path, self.table.tokens[seat], body)
        if r.status_code != 200:
            return None
        view: dict[str, Any] = _decode(r.content)["view"]
        return view

    async def read_view(self, seat: int) -> dict[str, Any]:
        path = f"/api/matches/{self.table.match_id}"
        r = await self.http.request("GET", path, self.table.tokens[seat])
        view: dict[str, Any] = _decode(r.content)
        return view


_ANSWERS = ('{"kind":"ack"', '{"kind":"view"', '{"kind":"refused"')


class SocketSeat:
    """One seat's live socket: commands and view requests, answered by ``id``; the
    event frames the seat is sent are read (a real client must) and dropped."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.ws: Any = None
        self.reader: asyncio.Task[None] | None = None
        self.counter = 0

    async def open(self) -> None:
        from websockets.asyncio.client import connect

        self.ws = await connect(self.url, ping_interval=None, max_queue=None, compression=None)
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for raw in self.ws:
                if raw.startswith(_ANSWERS):
                    answer = _decode(raw)
                    future = self.pending.pop(answer["id"], None)
                    if future is not None and not future.done():
                        future.set_result(answer)
        except ConnectionClosed:
            pass
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError("socket closed"))

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.counter += 1
        request_id = str(self.counter)
        message["id"] = request_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        await self.ws.send(_encode(message).decode())
        return await asyncio.wait_for(future, 30)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.reader, 5)


class SocketGame(Game):
    """Commands and view requests on each seat's live socket (docs/live.md)."""

    def __init__(self, table: Table, rng: random.Random, host: str, port: int) -> None:
        super().__init__(table, rng)
        self.host, self.port = host, port
        self.seats: list[SocketSeat] = []

    async def open(self) -> None:
        base = f"ws://{self.host}:{self.port}/api/matches/{self.table.match_id}/ws"
        self.seats = [SocketSeat(f"{base}?token={token}") for token in self.table.tokens]
        for seat in self.seats:
            await seat.open()
        self.views = [await self.read_view(0), await self.read_view(1)]

    async def close(self) -> None:
        for seat in self.seats:
            await seat.close()
        self.seats = []

    async def command(self, route: str, seat: int, body: dict[str, Any]) -> dict[str, Any] | None:
        answer = await self.seats[seat].ask({"kind": route, **body})
        if answer["kind"] != "ack":
            return None
        view: dict[str, Any] = answer["view"]
        return view

    async def read_view(self, seat: int) -> dict[str, Any]:
        known = max(v.get("version", 0) for v in self.views)
        answer = await self.seats[seat].ask({"kind": "view", "version": known or None})
        view: dict[str, Any] = answer["view"]
        return view


FLOOR_MOVES_PER_MATCH = 32
"""Moves of one floor match before its sockets are closed and two new ones open:
about what a match of this bench's bots takes (random against heuristic)."""
_FLOOR_PAD = "x" * 200
"""Makes a floor move ~300 bytes, as a Matcha command's events row is about."""


class FloorGame(Game):
    """A match on the stack's floor (``bench/floor_app.py``): two seats' sockets
    taking turns, each move acknowledged after its row committed; ``fanout``:
    the opponent's socket is also sent the move (read and dropped, as
    ``SocketSeat`` drops Matcha's event frames). No rules and no views: the
    floor is what a durable, fanned-out move costs on this stack."""

    def __init__(self, table: Table, rng: random.Random, host: str, port: int, fanout: bool):
        super().__init__(table, rng)
        self.route = "floor-fanout" if fanout else "floor"
        self.host, self.port = host, port
        self.seats: list[SocketSeat] = []
        self.moves = 0

    async def open(self) -> None:
        match_id = uuid.uuid4().hex
        base = f"ws://{self.host}:{self.port}/{self.route}/{match_id}"
        self.seats = [SocketSeat(f"{base}/{seat}") for seat in (0, 1)]
        for seat in self.seats:
            await seat.open()
        self.moves = 0

    async def close(self) -> None:
        for seat in self.seats:
            await seat.close()
        self.seats = []

    async def renew(self, client: httpx.AsyncClient) -> None:
        await self.close()
        await self.open()

    def next_command(self) -> tuple[int, str, dict[str, Any]]:
        body = {"expected_version": self.moves, "card": "S2", "target": "suit", "pad": _FLOOR_PAD}
        return self.moves % 2, "move", body

    async def command(self, route: str, seat: int, body: dict[str, Any]) -> dict[str, Any] | None:
        answer = await self.seats[seat].ask({"kind": route, **body})
        return answer if answer["kind"] == "ack" else None

    async def after(self, seat: int, view: dict[str, Any] | None) -> bool:
        self.moves += 1
        return self.moves < FLOOR_MOVES_PER_MATCH


class PhaseRecord:
    """What one capacity or open-loop run measured."""

    def __init__(self) -> None:
        self.started_at = 0.0
        self.stop_at = 0.0
        self.latency_ms: list[float] = []
        self.accepted = 0
        """Accepted commands whose arrival was scheduled in the window (their latencies)."""
        self.completed = 0
        """Accepted commands answered in the window (the rate, and the CPU's divisor)."""
        self.refused = 0
        self.server_cpu_s = 0.0
        self.client_cpu_s = 0.0
        self.database_cpu_s = 0.0

    def measuring(self, at: float) -> bool:
        return self.started_at <= at < self.stop_at


async def _one_command(
    client: httpx.AsyncClient, game: Game, rec: PhaseRecord, scheduled: float
) -> None:
    """The game's next command; latency counted from ``scheduled``; then what it
    changed is read, and a finished match is followed by a new one."""
    seat, route, body = game.next_command()
    view = await game.command(route, seat, body)
    done = time.perf_counter()
    if view is not None and rec.measuring(done):
        rec.completed += 1
    if rec.measuring(scheduled):
        if view is None:
            rec.refused += 1
        else:
            rec.accepted += 1
            rec.latency_ms.append((done - scheduled) * 1000)
    if not await game.after(seat, view):
        await game.renew(client)


async def _measured(rec: PhaseRecord, server_pid: int, dbname: str, run: Any) -> None:
    await asyncio.gather(_measure_cpu(rec, server_pid, dbname), run)


async def _closed_loop(client: httpx.AsyncClient, games: list[Game], rec: PhaseRecord) -> None:
    """Every game sends its next command as soon as the last one is answered."""

    async def lane(game: Game) -> None:
        while time.perf_counter() < rec.stop_at:
            await _one_command(client, game, rec, time.perf_counter())

    await asyncio.gather(*(lane(g) for g in games))


async def _open_loop(
    client: httpx.AsyncClient, games: list[Game], rec: PhaseRecord, rate: float
) -> None:
    """Arrivals on a fixed schedule (``rate`` per s) until ``stop_at``: each takes
    the next game that is ready. A late arrival (nobody ready, the loop stalled)
    still counts its latency from its scheduled instant (no coordinated omission)."""
    ready: asyncio.Queue[Game] = asyncio.Queue()
    for game in games:
        ready.put_nowait(game)
    running: set[asyncio.Task[None]] = set()

    async def serve(game: Game, scheduled: float) -> None:
        try:
            await _one_command(client, game, rec, scheduled)
        finally:
            ready.put_nowait(game)

    begin = time.perf_counter()
    k = 0
    while True:
        scheduled = begin + k / rate
        if scheduled >= rec.stop_at:
            break
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        game = await ready.get()
        task = asyncio.create_task(serve(game, scheduled))
        running.add(task)
        task.add_done_callback(running.discard)
        k += 1
    if running:
        await asyncio.wait(running, timeout=30)


async def _phase(
    client: httpx.AsyncClient,
    path: str,
    rate: float | None,
    server_pid: int,
    dbname: str,
) -> PhaseRecord:
    """One run over ``path`` (``http``, ``socket``, ``floor``, ``floor_fanout``):
    closed loop when ``rate`` is None."""
    host, port = client.base_url.host, client.base_url.port or 80
    games: list[Game]
    if path.startswith("floor"):
        nobody = Table(ladder="", organiser="", players=("", ""), tokens=("", ""))
        fanout = path == "floor_fanout"
        games = [FloorGame(nobody, random.Random(i), host, port, fanout) for i in range(MATCHES)]
    else:
        tables = await _setup(client, MATCHES)
        kind = HttpGame if path == "http" else SocketGame
        games = [kind(t, random.Random(i), host, port) for i, t in enumerate(tables)]
    for game in games:
        await game.open()
    rec = PhaseRecord()
    rec.started_at = time.perf_counter() + PHASE_WARMUP_S
    rec.stop_at = rec.started_at + PHASE_S
    run = _closed_loop(client, games, rec) if rate is None else _open_loop(client, games, rec, rate)
    await _measured(rec, server_pid, dbname, run)
    for game in games:
        await game.close()
    return rec


def _cpu_ms(rec: PhaseRecord) -> dict[str, float]:
    n = max(rec.completed, 1)
    return {
        "server": round(rec.server_cpu_s * 1000 / n, 3),
        "database": round(rec.database_cpu_s * 1000 / n, 3),
        "client": round(rec.client_cpu_s * 1000 / n, 3),
    }


Server = tuple[str, int, str]
"""A served app: (base URL, server pid, database name)."""


async def _side_by_side(servers: dict[str, Server]) -> dict[str, object]:
    """Capacity and open-loop latency over each path (``servers``: the server each
    takes), the paths in turn at each step so that the load of a shared machine
    falls on all of them alike."""
    out: dict[str, object] = {}
    cores = os.cpu_count() or 1
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=50)
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            path: await stack.enter_async_context(
                httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60)
            )
            for path, (base_url, _pid, _name) in servers.items()
        }

        async def phase(path: str, rate: float | None) -> PhaseRecord:
            _base_url, pid, name = servers[path]
            return await _phase(clients[path], path, rate, pid, name)

        for path in servers:
            rec = await phase(path, None)
            throughput = rec.completed / PHASE_S
            ours = (rec.server_cpu_s + rec.database_cpu_s + rec.client_cpu_s) / (PHASE_S * cores)
            cpu = _cpu_ms(rec)
            # Commands/s at 90 % of the machine's cores, from the CPU each command cost
            # (server, PostgreSQL, client): what this machine carries when the bench has
            # it to itself. The closed-loop rate is kept too: on a shared machine it is
            # what the cores left to the bench carried.
            per_command_s = (cpu["server"] + cpu["database"] + cpu["client"]) / 1000
            capacity = 0.9 * cores / per_command_s if per_command_s else throughput
            out[f"{path}_closed_loop_commands_per_s"] = round(throughput, 1)
            out[f"{path}_closed_loop_cpu_busy"] = round(ours, 3)
            out[f"{path}_closed_loop_p99_ms"] = round(_percentile(rec.latency_ms, 0.99), 2)
            out[f"{path}_capacity_commands_per_s"] = round(capacity, 1)
            out[f"{path}_cpu_ms_per_command"] = round(cpu["server"] + cpu["database"], 3)
            out[f"{path}_server_cpu_ms_per_command"] = cpu["server"]
            out[f"{path}_database_cpu_ms_per_command"] = cpu["database"]
            out[f"{path}_client_cpu_ms_per_command"] = cpu["client"]
            out[f"{path}_closed_loop_load_average"] = load = round(os.getloadavg()[0], 2)
            print(f"{path:>12} capacity: {throughput:7.1f} commands/s closed loop, our CPU"
                  f" {ours:.0%} of {cores} cores -> {capacity:7.1f}/s at 90 %; CPU ms per"
                  f" command: server {cpu['server']}, PostgreSQL {cpu['database']},"
                  f" client {cpu['client']}; load {load}")  # fmt: skip
        for rate in RATES:
            for path in servers:
                rec = await phase(path, rate)
                p50, p99, p999 = (_percentile(rec.latency_ms, q) for q in (0.5, 0.99, 0.999))
                out[f"{path}_p50_ms_at_{rate}"] = round(p50, 2)
                out[f"{path}_p99_ms_at_{rate}"] = round(p99, 2)
                out[f"{path}_p99_9_ms_at_{rate}"] = round(p999, 2)
                out[f"{path}_accepted_per_s_at_{rate}"] = round(rec.completed / PHASE_S, 1)
                cpu = _cpu_ms(rec)
                out[f"{path}_cpu_ms_per_command_at_{rate}"] = cpu
                out[f"{path}_load_average_at_{rate}"] = load = round(os.getloadavg()[0], 2)
                print(f"{path:>12} at {rate:4d}/s offered: {rec.completed / PHASE_S:7.1f}/s"
                      f" accepted, p50 {p50:7.2f} ms, p99 {p99:7.2f} ms, p99.9 {p999:7.2f} ms;"
                      f" refused {rec.refused}; CPU ms/command {cpu}; load {load}")  # fmt: skip
    return out


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _wait_until_up(base_url: str, proc: subprocess.Popen[bytes], probe: str) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the API process exited during start")
        try:
            if httpx.get(base_url + probe, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the API did not start within 60 s")


def _old_figures(rec: Recorder) -> dict[str, object]:
    """The first figure: 100 matches, think time, HTTP, closed loop per match."""
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
    return result


@contextlib.contextmanager
def bench_server(
    server_url: str, label: str, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[str, int, str]]:
    """A fresh migrated database and the API on it (uvicorn x ``WORKERS``), for one
    run: yields (base URL, server pid, database name); both gone afterwards."""
    env = {
        "MATCHA_ADMIN_TOKEN": ADMIN_TOKEN,
        "MATCHA_MIGRATE_ON_START": "0",
        "MATCHA_LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    with _served(server_url, label, "service.app:create_app", "/api/ladders", env) as up:
        yield up


@contextlib.contextmanager
def floor_server(server_url: str) -> Iterator[tuple[str, int, str]]:
    """The stack's floor (``bench/floor_app.py``) on a fresh database, served like
    the API: yields (base URL, server pid, database name)."""
    from bench.floor_app import SCHEMA

    with _served(server_url, "floor", "bench.floor_app:create_app", "/up", {}, SCHEMA) as up:
        yield up


@contextlib.contextmanager
def _served(
    server_url: str,
    label: str,
    factory: str,
    probe: str,
    extra_env: dict[str, str],
    schema: str | None = None,
) -> Iterator[tuple[str, int, str]]:
    """A throwaway database (migrated, or given ``schema``) and uvicorn x ``WORKERS``
    serving ``factory`` on it, up once ``probe`` answers 200."""
    name = f"matcha_bench_{label}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = with_database(server_url, name)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    proc: subprocess.Popen[bytes] | None = None
    try:
        if schema is None:
            apply_migrations(url)
        else:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(schema)  # a fixed statement of ours
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "REDIS_URL": os.environ.get("MATCHA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
            "MATCHA_REDIS_PREFIX": f"bench{uuid.uuid4().hex[:8]}",
            **extra_env,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", factory,
             "--host", "127.0.0.1", "--port", str(port), "--workers", str(WORKERS),
             "--http", PROTOCOL, "--no-access-log", "--log-level", "warning"],
            env=env,
        )  # fmt: skip
        _wait_until_up(base_url, proc, probe)
        yield base_url, proc.pid, name
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _against_the_floor(side: dict[str, Any]) -> dict[str, object]:
    """``socket_cost_vs_floor``: Matcha's socket server + PostgreSQL CPU per command
    over the floor-with-fan-out's, at the first offered rate (250/s by default);
    and the table of issue 25 with this run's figures."""
    rate = RATES[0] if RATES else None
    rows = [
        ("the stack's floor (INSERT + commit, PUBLISH, ack)", "floor"),
        ("the floor with fan-out (+ the opponent's socket via Redis)", "floor_fanout"),
        ("Matcha over the seat's socket", "socket"),
        ("Matcha over HTTP", "http"),
    ]
    at = f"at {rate}/s" if rate else ""
    print(f"{'what':<60} {'server + PostgreSQL ms per command':>36}")
    print(f"{'':<60} {at:>18} {'closed loop':>17}")
    for label, path in rows:
        if f"{path}_cpu_ms_per_command" not in side:
            continue
        shown = side.get(f"{path}_cpu_ms_per_command_at_{rate}") or {}
        open_loop = (
            f"{shown.get('server', 0):.2f} + {shown.get('database', 0):.2f}" if shown else ""
        )
        closed = (
            f"{side[f'{path}_server_cpu_ms_per_command']:.2f}"
            f" + {side[f'{path}_database_cpu_ms_per_command']:.2f}"
        )
        print(f"{label:<60} {open_loop:>18} {closed:>17}")
    socket = side.get(f"socket_cpu_ms_per_command_at_{rate}")
    floor = side.get(f"floor_fanout_cpu_ms_per_command_at_{rate}")
    if not socket or not floor:
        return {}
    ratio = (socket["server"] + socket["database"]) / (floor["server"] + floor["database"])
    print(f"socket_cost_vs_floor (at {rate}/s): {ratio:.2f}  (goal <= 1.5)")
    return {
        "socket_cost_vs_floor": round(ratio, 2),
        "socket_cost_vs_floor_rate": rate,
        "goal_socket_cost_vs_floor": 1.5,
        "socket_cost_vs_floor_note": "Matcha's socket path: server + PostgreSQL CPU per"
        " accepted command at the rate; the floor with fan-out's per move at the same"
        " offered rate. Matcha's command also carries the opponent's view read and the"
        " event frames to both seats (with receipts); the floor's move only its row, its"
        " publish, its ack and the frame to the opponent.",
    }


def main() -> dict[str, object]:
    server_url = os.environ.get(
        "MATCHA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    with contextlib.ExitStack() as stack:
        api = stack.enter_context(bench_server(server_url, "api"))
        floor = stack.enter_context(floor_server(server_url)) if FLOOR_PATHS_RUN else None
        rec = asyncio.run(_drive(*api)) if OLD_CLOSED_LOOP else None
        servers = {
            path: api if floor is None or path not in FLOOR_PATHS else floor for path in PATHS
        }
        side = asyncio.run(_side_by_side(servers))

    result: dict[str, object] = {}
    if rec is not None:
        result = _old_figures(rec)
    result.update(side)
    result.update(_against_the_floor(side))
    result.update(
        {
            "matches_in_play": MATCHES,
            "api_workers": WORKERS,
            "phase_seconds": PHASE_S,
            "side_by_side_note": "one server (uvicorn x api_workers), one database, each path"
            " in turn: capacity = 90 % of the cores divided by the CPU one accepted command cost"
            " (server + PostgreSQL backends + client) in a closed loop without think time, whose"
            " rate is *_closed_loop_commands_per_s (on a shared machine: what the cores left to"
            " the bench carried); latency at each offered rate: open loop, arrivals on a"
            " fixed schedule taking the next ready match, counted from the scheduled instant"
            " (coordinated omission corrected). Every command is followed by the opponent"
            " reading its view when it has something to do: a GET over HTTP, a view message"
            " over the socket; the socket path also sends every event frame to both seats."
            " CPU per accepted command: server + PostgreSQL (the *_cpu_ms_per_command keys),"
            " client apart. floor / floor_fanout: the stack's floor (bench/floor_app.py, its"
            " own uvicorn x api_workers and database, driven by the same load generator and"
            " CPU accounting): per move one INSERT of a ~300-byte row (autocommit), one Redis"
            " PUBLISH, an ack; floor_fanout also sends the move to the opponent's socket"
            " through a Redis subscription on every worker.",
            "goal_socket": {"cpu_ms_per_command": 1.0, "capacity_commands_per_s": 1500,
                            "p99_ms_at_500": 25},
            "goal_http": {"capacity_commands_per_s": 1000, "p99_ms_at_500": 25},
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "note": "load_average_1m_at_end > cores means other work ran on the machine",
        }
    )  # fmt: skip
    merge_results(RESULTS, result)
    return result


if __name__ == "__main__":
    main()
