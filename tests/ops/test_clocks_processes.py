"""Clocks end matches nobody finishes: whole matches over the real HTTP API on two
API processes, with two `matcha worker` processes sweeping the deadlines.

A seat stops moving; the sweepers end the match by time-out exactly once (one
``match_ended`` in the log, appended by the service), and again when the
worker that claimed the deadline is killed in the middle of its sweep (its
lease runs out, the other worker takes it). The winner's rating goes up; a
match aborted because a seat never made its first move changes no rating.
Clocks here are real (seconds): every wait is bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import Account, Api

from service.embedded import free_port

from .processes import Service, service_database, service_env, wait_for, wait_ready

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ADMIN = "ops-faults-admin-" + "z" * 24
TIMED = {"kind": "real_time", "base_s": 3, "increment_s": 0, "no_show_s": 60}
NO_SHOW = {"kind": "real_time", "base_s": 60, "no_show_s": 2}


@pytest.fixture
def service(
    tmp_path: Path, pg_server_url: str, redis_server_url: str, redis_prefix: str
) -> Iterator[tuple[Service, str, str, str]]:
    with service_database(pg_server_url) as (app_url, owner_url):
        running = Service(tmp_path, service_env(app_url, redis_server_url, redis_prefix))
        ports = [free_port(), free_port()]
        apis = [running.api(f"api-{i}", port) for i, port in enumerate(ports)]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        try:
            for i, (base, proc) in enumerate(zip(bases, apis, strict=True)):
                wait_ready(base, proc, f"API {i}")
            yield running, bases[0], bases[1], owner_url
        finally:
            running.stop_all()


def _endings(owner_url: str, match_id: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(owner_url) as conn:
        return conn.execute(
            "SELECT data->>'winner', data->>'reason', actor FROM events"
            " WHERE match_id = %s AND type = 'match_ended'",
            (match_id,),
        ).fetchall()


async def _move_until_the_clocks_run(
    api: Api, other: Api, match_id: str, seats: tuple[Account, Account]
) -> int:
    """Each seat moves once (half through each API process), so both main clocks are
    on; then nobody moves. The seat to move next (who will time out)."""
    for turn in range(2):
        client = api if turn == 0 else other
        views = [await client.view(match_id, s) for s in seats]
        seat = views[0]["to_move"]
        assert seat in (0, 1), views[0]
        response = await client.client.post(
            f"/api/matches/{match_id}/pass",
            json={"expected_version": views[seat]["version"]},
            headers=seats[seat].auth,
        )
        assert response.status_code == 200, response.text
    view = await api.view(match_id, seats[0])
    clocks = view["clocks"]
    assert clocks is not None and clocks["control"]["kind"] == "real_time"
    running = [c["seat"] for c in clocks["seats"] if c["running"]]
    assert len(running) == 1
    return int(running[0])


def _board(base: str, ladder_id: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(
        f"{base}/api/ladders/{ladder_id}/leaderboard", timeout=10
    ).json()
    return body


def test_a_seat_that_stops_moving_loses_on_time_once_even_when_a_sweeping_worker_is_killed(
    service: tuple[Service, str, str, str],
) -> None:
    running, a, b, owner_url = service
    workers = [running.worker("worker-0"), running.worker("worker-1")]

    async def scenario() -> tuple[str, list[tuple[str, int, Account, Account]]]:
        async with (
            httpx.AsyncClient(base_url=a, timeout=30) as ca,
            httpx.AsyncClient(base_url=b, timeout=30) as cb,
        ):
            api, other = Api(ca, ADMIN), Api(cb, ADMIN)
            organiser = await api.organiser()
            players = [await api.register() for _ in range(2)]
            ladder_id = await api.ladder(organiser, members=players, clock=TIMED)
            ladders = (await api.get(f"/api/ladders/{ladder_id}", None)).json()
            assert ladders["clock"] == TIMED
            match_id = await api.pair(ladder_id, organiser, *players)
            loser = await _move_until_the_clocks_run(api, other, match_id, (players[0], players[1]))
            return ladder_id, [(match_id, loser, players[0], players[1])]

    ladder_id, [(match_id, loser, p0, p1)] = asyncio.run(scenario())
    alive = lambda: [  # noqa: E731
        pytest.fail(running.log(f"worker-{i}"))
        for i, w in enumerate(workers)
        if w.poll() is not None
    ]
    wait_for(lambda: _endings(owner_url, match_id), 30, "the sweepers end the match", alive)
    assert _endings(owner_url, match_id) == [(str(1 - loser), "timeout", "system")]
    late = httpx.post(
        f"{a}/api/matches/{match_id}/pass",
        json={},
        headers=(p0 if loser == 0 else p1).auth,
        timeout=10,
    )
    assert late.status_code == 422 and late.json()["code"] == "match_over", late.text
    winner = (p0, p1)[1 - loser]
    wait_for(lambda: _board(b, ladder_id).get("matches", 0) >= 1, 60, "the ladder rates it")
    standings = {s["player_id"]: s for s in _board(b, ladder_id)["standings"]}
    assert standings[winner.id]["rating"] > standings[(p0, p1)[loser].id]["rating"]
    assert standings[(p0, p1)[loser].id]["timeouts"] == 1

    # A worker killed mid-sweep: only the faulty one runs when the deadline comes;
    # it claims the deadline and dies; the other worker, started after, takes it
    # once the claim's lease has run out. Still exactly one time-out.
    for name in ("worker-0", "worker-1"):
        running.kill(name)
    faulty = running.worker("worker-faulty", MATCHA_FAULT_KILL_IN_SWEEP="1")

    async def second() -> tuple[str, int]:
        async with (
            httpx.AsyncClient(base_url=a, timeout=30) as ca,
            httpx.AsyncClient(base_url=b, timeout=30) as cb,
        ):
            api, other = Api(ca, ADMIN), Api(cb, ADMIN)
            organiser = await api.organiser()
            match_id = await api.pair(ladder_id, organiser, p0, p1)
            return match_id, await _move_until_the_clocks_run(api, other, match_id, (p0, p1))

    match2, loser2 = asyncio.run(second())
    wait_for(lambda: faulty.poll() is not None, 30, "the faulty worker claims and dies")
    assert "killing this worker mid-sweep" in running.log("worker-faulty")
    assert _endings(owner_url, match2) == [], "killed before its append"
    running.worker("worker-2")
    wait_for(lambda: _endings(owner_url, match2), 30, "another worker ends the match")
    assert _endings(owner_url, match2) == [(str(1 - loser2), "timeout", "system")]


def test_a_match_whose_seat_never_makes_a_first_move_is_aborted_and_changes_no_rating(
    service: tuple[Service, str, str, str],
) -> None:
    running, a, b, owner_url = service
    running.worker("worker-0")
    running.worker("worker-1")

    async def scenario() -> tuple[str, str, Account, Account]:
        async with httpx.AsyncClient(base_url=a, timeout=30) as ca:
            api = Api(ca, ADMIN)
            ladder_id, match_id, p0, p1 = await api.new_ladder_match(clock=NO_SHOW)
            return ladder_id, match_id, p0, p1

    ladder_id, match_id, p0, p1 = asyncio.run(scenario())
    wait_for(lambda: _endings(owner_url, match_id), 30, "the sweepers abort the match")
    assert _endings(owner_url, match_id) == [(None, "aborted", "system")]
    view = httpx.get(f"{b}/api/matches/{match_id}", timeout=10).json()
    assert view["result"]["reason"] == "aborted" and view["result"]["winner"] is None
    outcome = httpx.get(f"{b}/api/matches/{match_id}/outcome", timeout=10).json()
    assert outcome["rated"] is False

    # A second match of the same two players ends by resignation: once the ladder
    # has rated it, each player has played one rated game, not two.
    async def resigned() -> None:
        async with httpx.AsyncClient(base_url=a, timeout=30) as ca:
            api = Api(ca, ADMIN)
            organiser = await api.organiser()
            second = await api.pair(ladder_id, organiser, p0, p1)
            response = await api.post(f"/api/matches/{second}/resign", p0)
            assert response.status_code == 200, response.text

    asyncio.run(resigned())
    wait_for(lambda: _board(b, ladder_id).get("matches", 0) >= 1, 60, "the ladder rates it")
    board = _board(b, ladder_id)
    assert board["matches"] == 1, board
    assert sorted(s["games"] for s in board["standings"]) == [1, 1], board
