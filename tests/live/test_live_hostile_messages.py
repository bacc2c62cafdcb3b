"""The socket refuses, never crashes: whatever a client sends on a match socket
(bad JSON, 1,500-deep nesting, huge integers, messages that do not exist), each is
answered with a ``refused`` frame carrying the 400 problem HTTP would answer, the
socket stays open, and the log is unchanged; as the first message it closes 4400.
A seat cannot claim a time-out on its socket, and a late move there loses on time
by the same engine rule as over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from harness import HandClock
from litestar import Litestar
from live_harness import WAIT_S, Driver, SeatSocket, serve_in_process
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from service.app import app_state, create_app
from service.engine import clock, fold
from service.settings import Settings
from service.store import EventStore

pytestmark = pytest.mark.anyio

DEPTH = 1_500


def deep(depth: int = DEPTH, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


UNREADABLE = {
    "a seat command nested 1,500 arrays deep": '{"kind": "play", "id": "d1", "card": '
    + deep()
    + ', "target": "number"}',
    "bare 1,500-deep arrays": deep(),
    "1,500-deep objects": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "an id nested 1,500 deep": '{"kind": "pass", "id": ' + deep() + "}",
    "not JSON": '{"kind": "pass", "id":',
    "an empty message": "",
    "a version past 2^63": '{"kind": "pass", "id": "v1", "expected_version": 9223372036854775808}',
    "a version of 2^31": '{"kind": "pass", "id": "v2", "expected_version": 2147483648}',
    "a negative version": '{"kind": "pass", "id": "v3", "expected_version": -1}',
    "a view at 10^30": '{"kind": "view", "id": "v4", "version": 1000000000000000000000000000000}',
    "a time-out claim": '{"kind": "time_out", "id": "t1"}',
    "a misspelt field": '{"kind": "pass", "id": "f1", "expected_versoin": 3}',
    "a number": "7",
}


async def test_given_a_seat_socket_when_it_sends_unreadable_messages_then_each_is_refused_400_and_it_stays_open(  # noqa: E501
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, _ = await driver.new_match()
    before = await store.load(match_id)
    seat = await SeatSocket(f"ws://{server}/api/matches/{match_id}/ws", a.token).open()
    assert seat._ws is not None
    for name, raw in UNREADABLE.items():
        await seat._ws.send(raw)
        refused = await seat.ask({"kind": "view"})  # answered in order: the refusal came first
        problems = [f for f in seat.frames if f["kind"] == "refused"]
        assert len(problems) == 1, (name, seat.frames[-3:])
        problem = problems[0]["problem"]
        assert (problem["status"], problem["code"]) == (400, "validation_error"), (name, problem)
        assert refused["kind"] == "view" and refused["view"]["version"] == len(before), name
        seat.frames.clear()
    assert await store.load(match_id) == before, "the log is unchanged"
    await seat.drop()


async def test_given_an_unreadable_first_message_then_the_socket_closes_4400(
    server: str, driver: Driver
) -> None:
    match_id, _, _ = await driver.new_match()
    url = f"ws://{server}/api/matches/{match_id}/ws"
    for name, raw in UNREADABLE.items():
        async with connect(url, ping_interval=None, open_timeout=WAIT_S) as ws:
            await ws.send(raw)
            with pytest.raises(ConnectionClosed) as closed:
                async with asyncio.timeout(WAIT_S):
                    while True:
                        await ws.recv()
        assert closed.value.rcvd is not None, name
        assert closed.value.rcvd.code == 4400, (name, closed.value)


# -- the clock on the socket --------------------------------------------------------

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)
BLITZ = {"kind": "real_time", "base_s": 10, "increment_s": 1, "no_show_s": 5}


@pytest.fixture
async def clocked(live_settings: Settings) -> AsyncIterator[tuple[str, Litestar, HandClock]]:
    app = create_app(live_settings)
    async with serve_in_process(live_settings, app) as base:
        now = HandClock(T0)
        app_state(app).matches.now = now
        yield base, app, now


async def test_given_a_timed_match_a_late_move_on_the_socket_loses_on_time_and_no_claim_exists(
    clocked: tuple[str, Litestar, HandClock], store: EventStore
) -> None:
    base, app, now = clocked
    async with httpx.AsyncClient(base_url=f"http://{base}", timeout=30) as client:
        driver = Driver(client)
        match_id, a, b = await driver.new_match(clock=BLITZ)
        rows = await store.load(match_id)
        state = fold([r.event for r in rows], None, times=[r.recorded_at for r in rows])
        to_move = state.to_move
        assert to_move is not None
        due = clock.deadline(state, to_move)
        assert due == T0 + timedelta(seconds=5)
        url = f"ws://{base}/api/matches/{match_id}/ws"
        mover = await SeatSocket(url, (a, b)[to_move].token).open()
        rival = await SeatSocket(url, (a, b)[1 - to_move].token).open()
        now.at = due
        claim = await rival.ask({"kind": "time_out"})
        assert claim["kind"] == "refused" and claim["problem"]["status"] == 400
        assert await store.load(match_id) == rows, "no claim message: nothing appended"
        late = await mover.ask({"kind": "pass", "expected_version": len(rows)})
        assert late["kind"] == "refused", late
        assert late["problem"]["code"] == "time_expired"
        ended = (await store.load(match_id))[len(rows) :]
        assert [r.type for r in ended] == ["match_ended"]
        assert ended[0].event.reason == "aborted"  # type: ignore[attr-defined]
        assert ended[0].recorded_at == due, "recorded at the instant the engine judged it"
        for sock in (mover, rival):
            await sock.drop()
    del app
