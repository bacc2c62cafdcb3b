"""The clustered shape failing over under whole matches (issue 30), as ``make cluster``
runs it: six Redis nodes in cluster mode that the APIs speak to (``redis+cluster://``:
sharded pub/sub), a PostgreSQL primary with a hot standby, two APIs behind nginx
sticky by match id, two workers.

Matches are played through the proxy while live spectators (WebSocket and SSE) and
a seat watch each. Mid-run the Redis master that carries the most of their channels
is killed (SIGKILL): its replica takes over and every hub places its subscriptions
there and sweeps the store. Later the PostgreSQL primary is stopped and the standby
promoted: the services' URL names both servers and connects to whichever takes
writes. Commands meanwhile are retried with the version they were decided on (a
command that did commit is refused with 409, never doubled). Then: every
acknowledged command is in the log once, each log is gapless, every viewer's
stream (resumed with ``since`` whenever it ended) holds every version once, the
projections (summaries, ratings, replay archives) converge, and the audit passes on every match."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "live"))

from harness import Account
from live_harness import ADMIN_TOKEN, Driver, SseWatcher, Watcher

from service.audit.audit import audit_match
from service.bots.seat_view import move_request
from service.broker import channels
from service.cluster.shape import Ports, Shape, start_shape
from service.replays.store import current_archive_async
from service.supervisor import Supervisor

pytestmark = [pytest.mark.proxy, pytest.mark.timeout(600), pytest.mark.anyio]

MATCHES = 4
PREFIX = "matcha"
"""The services' Redis prefix (the default of settings.redis.prefix)."""
PATIENCE_S = 60.0
"""How long one command may take to be decided across a failover."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def shape(cluster_dir: Path) -> Iterator[Shape]:
    """The whole shape, the APIs and workers on the cluster URL; stopped afterwards."""
    supervisor = Supervisor("failover test")
    try:
        yield start_shape(
            supervisor,
            cluster_dir / "failover",
            Ports.free(),
            token=ADMIN_TOKEN,
            workers=2,
            services_redis="cluster",
            say=lambda _: None,
        )
    finally:
        supervisor.stop_all()


# ---- the players: commands that outlive a failover ------------------------------------


@dataclass
class Played:
    match_id: str
    ladder_id: str
    seats: tuple[Account, Account]
    acknowledged: list[int] = field(default_factory=list)
    """The version of every command answered 200, in the order sent."""
    refused_as_done: int = 0
    """Resends answered 409: the first attempt had committed (not doubled)."""
    over: bool = False


async def _answer(send: Any) -> httpx.Response:
    """``send()`` again until the service decides (anything but a 5xx or no answer)."""
    deadline = time.monotonic() + PATIENCE_S
    delay = 0.1
    while True:
        with contextlib.suppress(httpx.TransportError):
            response: httpx.Response = await send()
            if response.status_code < 500:
                return response
        assert time.monotonic() < deadline, "the service decided nothing for a minute"
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


async def _step(client: httpx.AsyncClient, played: Played, rng: random.Random) -> None:
    """One command by whichever seat has a decision, resent across failures with the
    version it was decided on."""
    for account in played.seats:
        url = f"/api/matches/{played.match_id}"
        view = (await _answer(partial(client.get, url, headers=account.auth))).json()
        if view["result"] is not None:
            played.over = True
            return
        moves = [m for m in view["legal_moves"] if m["type"] != "resign"]
        if not moves:
            continue
        request = move_request(rng.choice(moves))
        assert request is not None
        path, body = request
        body["expected_version"] = view["version"]
        answer = await _answer(
            partial(client.post, f"{url}/{path}", json=body, headers=account.auth)
        )
        if answer.status_code == 200:
            played.acknowledged.append(int(answer.json()["version"]))
        else:  # committed by an attempt whose answer was lost: refused, not doubled
            assert answer.status_code == 409, answer.text
            played.refused_as_done += 1
        return
    raise AssertionError(f"nobody may act in {played.match_id}")


async def _play(client: httpx.AsyncClient, games: list[Played], steps: int, seed: int) -> None:
    async def one(played: Played, rng: random.Random) -> None:
        for _ in range(steps):
            if played.over:
                return
            await _step(client, played, rng)

    await asyncio.gather(*(one(p, random.Random(seed + n)) for n, p in enumerate(games)))


# ---- the viewers: streams resumed with `since` whenever they end ------------------------


@dataclass
class Viewer:
    """A live viewer through the proxy that reconnects with ``since`` = its last
    version whenever its stream ends (a failover, a restart), as docs/live.md says."""

    base: str
    kind: str  # "ws" or "sse"
    headers: dict[str, str] = field(default_factory=dict)
    versions: list[int] = field(default_factory=list)
    reconnects: int = 0
    _task: asyncio.Task[None] | None = None
    _stop: bool = False
    _cut: bool = False

    def start(self) -> Viewer:
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while not self._stop:
            since = self.versions[-1] if self.versions else 0
            watcher: Watcher | SseWatcher
            try:
                if self.kind == "ws":
                    watcher = Watcher(
                        f"{self.base}/ws?since={since}",
                        headers=self.headers,
                        hello=None if self.headers else {"kind": "hello"},
                    )
                else:
                    watcher = SseWatcher(f"{self.base}/stream?since={since}")
                await watcher.start()
                taken = 0
                while watcher._task is not None and not watcher._task.done() and not self._stop:
                    if self._cut:  # the client's own network dropped
                        self._cut = False
                        break
                    taken = self._take(watcher, taken)
                    await asyncio.sleep(0.02)
                self._take(watcher, taken)
                await watcher.close()
            except Exception:  # refused or cut while the service fails over: again
                await asyncio.sleep(0.3)
            if not self._stop:
                self.reconnects += 1
                await asyncio.sleep(0.1)

    def _take(self, watcher: Watcher | SseWatcher, taken: int) -> int:
        versions = watcher.versions
        self.versions.extend(versions[taken:])
        return len(versions)

    def cut(self) -> None:
        """Drop the connection now (it resumes with ``since``, like any ended stream)."""
        self._cut = True

    async def until(self, version: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.versions or self.versions[-1] < version:
            last = self.versions[-1] if self.versions else 0
            assert time.monotonic() < deadline, f"{self.kind} {self.base}: at {last}, not {version}"
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        self._stop = True
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)


@contextlib.asynccontextmanager
async def _viewers(
    ws_base: str, http_base: str, games: list[Played]
) -> AsyncIterator[dict[str, list[Viewer]]]:
    watching: dict[str, list[Viewer]] = {}
    for played in games:
        ws = f"{ws_base}/api/matches/{played.match_id}"
        http = f"{http_base}/api/matches/{played.match_id}"
        watching[played.match_id] = [
            Viewer(ws, "ws").start(),
            Viewer(http, "sse").start(),
            Viewer(ws, "ws", headers=played.seats[0].auth).start(),
        ]
    try:
        yield watching
    finally:
        for viewers in watching.values():
            for viewer in viewers:
                await viewer.stop()


# ---- the failures -----------------------------------------------------------------------


def _busiest_master(shape: Shape, games: list[Played]) -> int:
    """The master that serves the slots of the most of these matches' channels."""
    served = Counter(
        shape.redis.master_of(channels.match_channel(PREFIX, p.match_id)) for p in games
    )
    return served.most_common(1)[0][0]


async def _resubscribed(shape: Shape, promoted: int, games: list[Played]) -> float:
    """When every hub holding a viewer of the killed master's matches had their
    channels on the replica that took over (sharded: ``PUBSUB SHARDNUMSUB`` there)."""
    moved = [
        channels.match_channel(PREFIX, p.match_id)
        for p in games
        if shape.redis.master_of(channels.match_channel(PREFIX, p.match_id)) == promoted
    ]
    assert moved, "the killed master served some of the matches"
    node = shape.redis.node(promoted)
    deadline = time.monotonic() + 30
    while True:
        counts = await asyncio.to_thread(node.ask, "PUBSUB", "SHARDNUMSUB", *moved)
        if all(int(n) >= 1 for n in counts[1::2]):
            return time.monotonic()
        assert time.monotonic() < deadline, f"the hubs did not subscribe again: {counts}"
        await asyncio.sleep(0.1)


def _replica_took_over(shape: Shape, killed: int, key: str, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):
            now = shape.redis.master_of(key)
            if now != killed:
                return now
        assert time.monotonic() < deadline, "no replica took over the killed master's slots"
        time.sleep(0.2)


# ---- the test -------------------------------------------------------------------------


async def test_given_whole_matches_with_viewers_when_redis_then_postgres_fail_over_nothing_is_lost(
    shape: Shape,
) -> None:
    http_base = shape.proxy_url.rstrip("/")
    ws_base = http_base.replace("http://", "ws://", 1)
    async with httpx.AsyncClient(base_url=http_base, timeout=10) as client:
        driver = Driver(client)
        games = []
        for _ in range(MATCHES):
            ladder_id, match_id, a, b = await driver.new_ladder_match("duel")
            games.append(Played(match_id, ladder_id, (a, b)))
        async with _viewers(ws_base, http_base, games) as watching:
            await _play(client, games, steps=4, seed=30)

            # 1. A Redis master, with the channels of most of these matches, killed.
            killed = _busiest_master(shape, games)
            key = channels.match_channel(PREFIX, games[0].match_id)
            shape.redis.kill(killed)
            killed_at = time.monotonic()
            await _play(client, games, steps=3, seed=31)  # during the failover
            promoted = await asyncio.to_thread(_replica_took_over, shape, killed, key)
            took_over_s = time.monotonic() - killed_at
            resubscribed_s = await _resubscribed(shape, promoted, games) - killed_at
            await _play(client, games, steps=3, seed=32)

            # 2. The PostgreSQL primary stopped, the standby promoted.
            await asyncio.to_thread(shape.postgres.wait_replayed)
            await asyncio.to_thread(shape.postgres.primary.stop)
            stopped = asyncio.create_task(_play(client, games, steps=3, seed=33))
            await asyncio.to_thread(shape.postgres.promote)
            await stopped
            for viewers in watching.values():  # and every viewer's connection drops once
                for viewer in viewers:
                    viewer.cut()
            while not all(p.over for p in games):
                await _play(client, games, steps=50, seed=34)

            # Every acknowledged command is in its match's log, once; each log is gapless.
            finals = {}
            async with await psycopg.AsyncConnection.connect(
                shape.database_url, autocommit=True
            ) as conn:
                for played in games:
                    cur = await conn.execute(
                        "SELECT version FROM events WHERE match_id = %s ORDER BY version",
                        (played.match_id,),
                    )
                    versions = [row[0] for row in await cur.fetchall()]
                    assert versions == list(range(1, len(versions) + 1)), played.match_id
                    finals[played.match_id] = versions[-1]
                    acked = played.acknowledged
                    assert acked == sorted(set(acked)), "an acknowledgement repeated"
                    assert set(acked) <= set(versions), "an acknowledged command was lost"

            # Every viewer's stream, resumed whenever it ended, holds every version once.
            for played in games:
                for viewer in watching[played.match_id]:
                    await viewer.until(finals[played.match_id])
                    assert viewer.versions == list(range(1, finals[played.match_id] + 1)), (
                        viewer.kind,
                        viewer.headers != {},
                        viewer.reconnects,
                    )

        # The projections converge: each match summarised as finished at its last
        # version, each ladder's ratings folded its one match, each replay archived
        # as its log stands (the workers' runners; nobody asked for the replay).
        deadline = time.monotonic() + 90
        async with await psycopg.AsyncConnection.connect(shape.database_url, autocommit=True) as db:
            for played in games:
                while True:
                    listed = partial(
                        client.get, "/api/matches", params={"ladder": played.ladder_id}
                    )
                    summary = (await _answer(listed)).json()
                    ranked = partial(client.get, f"/api/ladders/{played.ladder_id}/leaderboard")
                    board = (await _answer(ranked)).json()
                    archived = await current_archive_async(db, played.match_id) is not None
                    done = (
                        len(summary) == 1
                        and summary[0]["status"] == "finished"
                        and summary[0]["version"] == finals[played.match_id]
                        and board["matches"] == 1
                        and archived
                    )
                    if done:
                        break
                    assert time.monotonic() < deadline, (summary, board, archived)
                    await asyncio.sleep(0.5)

    # The audit passes on every match, read from the promoted primary.
    owner = shape.postgres.writer_url("matcha")
    async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
        for played in games:
            report = await audit_match(conn, played.match_id)
            assert report.verdict.consistent, json.dumps(report.verdict.reasons)
    reconnects = [v.reconnects for viewers in watching.values() for v in viewers]
    pg = shape.postgres
    print(
        f"\nfailover: Redis {killed} -> {promoted} (its replica a master after"
        f" {took_over_s:.1f} s, the hubs subscribed there after {resubscribed_s:.1f} s);"
        f" PostgreSQL {pg.primary.port} -> {pg.standby.port};"
        f" {sum(len(p.acknowledged) for p in games)} commands acknowledged,"
        f" {sum(p.refused_as_done for p in games)} resends refused as done;"
        f" viewer reconnects {sorted(reconnects)}"
    )
