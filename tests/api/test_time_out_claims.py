"""A player claims a time-out over HTTP (POST /api/matches/{id}/time-out): the engine
grants it only when the claimed seat's clock has run out at the claim's instant, and
never on an untimed match. Each refusal is a problem+json and leaves the log as it was.

The core's clock is injected (``MatchCore.now``), so "1 ms early" is exact, not a sleep.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from api_harness import Api, assert_problem, events_rows
from harness import HandClock
from litestar import Litestar

from service.app import app_state
from service.engine import clock, fold
from service.store import EventStore

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)
BLITZ = {"kind": "real_time", "base_s": 10, "increment_s": 1, "no_show_s": 5}


def clocked(app: Litestar) -> HandClock:
    now = HandClock(T0)
    app_state(app).matches.now = now
    return now


async def deadline_of(app: Litestar, match_id: str, seat: int) -> datetime:
    rows = await EventStore(app_state(app).pool).load(match_id)
    state = fold([r.event for r in rows], None, times=[r.recorded_at for r in rows])
    due = clock.deadline(state, 0 if seat == 0 else 1)
    assert due is not None, "the seat's clock is running"
    return due


async def claim(api: Api, match_id: str, who: object) -> object:
    return await api.post(f"/api/matches/{match_id}/time-out", who)  # type: ignore[arg-type]


async def test_given_an_untimed_match_when_either_seat_claims_a_time_out_then_it_is_refused(
    api: Api, app: Litestar, database_url: str
) -> None:
    match_id, a, b = await api.new_match()
    before = await events_rows(database_url, match_id)
    for who in (a, b, a):
        body = assert_problem(await claim(api, match_id, who), 409, "match_untimed")
        assert "no clock" in body["detail"]
    assert await events_rows(database_url, match_id) == before, "the log is unchanged"
    assert (await api.view(match_id, a))["result"] is None, "nobody won"


async def test_given_a_no_show_clock_a_claim_1_ms_early_is_refused_and_one_at_the_deadline_aborts(
    api: Api, app: Litestar, database_url: str
) -> None:
    now = clocked(app)
    match_id, a, b = await api.new_match(clock=BLITZ)
    state = (await api.view(match_id, a))["to_move"]
    mover, claimer = (a, b) if state == 0 else (b, a)
    due = await deadline_of(app, match_id, state)
    assert due == T0 + timedelta(seconds=5)
    before = await events_rows(database_url, match_id)
    now.at = due - MS
    assert_problem(await claim(api, match_id, claimer), 409, "time_not_expired")
    assert_problem(await claim(api, match_id, mover), 409, "time_not_expired")  # its rival waits
    assert await events_rows(database_url, match_id) == before
    now.at = due
    answer = await claim(api, match_id, claimer)
    assert answer.status_code == 200, answer.text  # type: ignore[attr-defined]
    result = answer.json()["view"]["result"]  # type: ignore[attr-defined]
    assert result["reason"] == "aborted" and result["winner"] is None


async def test_given_both_seats_moved_a_claim_1_ms_early_is_refused_and_one_at_the_deadline_wins(
    api: Api, app: Litestar, database_url: str
) -> None:
    now = clocked(app)
    match_id, a, b = await api.new_match(clock=BLITZ)
    seats = (a, b)
    for step in (1, 2):  # each seat passes once: both main clocks are in play
        to_move = (await api.view(match_id, a))["to_move"]
        now.at = T0 + step * 100 * MS
        passed = await api.post(f"/api/matches/{match_id}/pass", seats[to_move])
        assert passed.status_code == 200, passed.text
    to_move = (await api.view(match_id, a))["to_move"]
    due = await deadline_of(app, match_id, to_move)
    claimer = seats[1 - to_move]
    before = await events_rows(database_url, match_id)
    now.at = due - MS
    assert_problem(await claim(api, match_id, claimer), 409, "time_not_expired")
    assert await events_rows(database_url, match_id) == before
    stranger = await api.register()
    assert_problem(await claim(api, match_id, stranger), 403, "forbidden")
    now.at = due
    won = await claim(api, match_id, claimer)
    assert won.status_code == 200, won.text  # type: ignore[attr-defined]
    result = won.json()["view"]["result"]  # type: ignore[attr-defined]
    assert result == {**result, "winner": 1 - to_move, "reason": "timeout"}
    assert_problem(await claim(api, match_id, claimer), 422, "match_over")
