"""Glicko-2 ladders over the real HTTP app: strict settings, whole matches played
by bots, the leaderboard's RD, interval and provisional mark, the history's RDs
and periods, the expected score before a match (both systems)."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator

import psycopg
import pytest
from api_harness import ADMIN_TOKEN, Api, assert_problem, play_out
from litestar.testing import AsyncTestClient
from redis import Redis
from rq import SimpleWorker

from service.app import create_app
from service.broker.jobs import queues
from service.ratings import glicko2
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings
from workers.projections import catch_up_all

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
async def api(
    database_url: str, redis_server_url: str, redis_prefix: str, conn: psycopg.Connection
) -> AsyncIterator[Api]:
    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
    )
    async with AsyncTestClient(create_app(settings)) as client:
        yield Api(client)


async def test_ladder_rating_settings_are_checked_strictly_and_by_name(api: Api) -> None:
    organiser = await api.organiser()
    cases = [
        ("elo", {"k_factor": 16}, "k_factor"),  # an alias that used to be ignored
        ("elo", {"initial_rating": 1200}, "initial_rating"),
        ("elo", {"k_new": 500}, "k_new"),
        ("glicko2", {"tau": 5}, "tau"),
        ("glicko2", {"k_new": 40}, "k_new"),
        ("glicko2", {"rating_period_s": 1}, "rating_period_s"),
        ("glicko2", {"initial_rd": 400, "max_rd": 300}, "max_rd"),
        ("elo", {"system": "glicko2"}, "rating_system"),
    ]
    for system, rating, named in cases:
        r = await api.client.post(
            "/api/ladders",
            headers=organiser.auth,
            json={"name": f"bad-{named}", "rating_system": system, "rating": rating},
        )
        problem = assert_problem(r, 400, "validation_error")
        assert named in problem["detail"], problem
    r = await api.client.post(
        "/api/ladders",
        headers=organiser.auth,
        json={"name": "bad-system", "rating_system": "trueskill"},
    )
    assert_problem(r, 400, "validation_error")
    listed = (await api.client.get("/api/ladders")).json()
    assert not [ladder for ladder in listed if ladder["name"].startswith("bad-")]
    r = await api.client.post(
        "/api/ladders",
        headers=organiser.auth,
        json={"name": "good", "rating_system": "glicko2", "rating": {"tau": 0.3}},
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["rating_system"] == "glicko2"
    assert body["rating"] == {
        **{
            f: getattr(glicko2.DEFAULT_SETTINGS, f)
            for f in glicko2.Glicko2Settings.__struct_fields__
        },
        "tau": 0.3,
        "system": "glicko2",
    }


async def test_a_glicko2_ladder_played_over_http_shows_rd_interval_and_expected_scores(
    api: Api, redis: Redis, redis_prefix: str, database_url: str
) -> None:
    rng = random.Random(11)
    organiser = await api.organiser()
    ann, bob, cat = [await api.register() for _ in range(3)]
    ladder_id = await api.ladder(
        organiser, "duel", members=(ann, bob, cat), rating_system="glicko2"
    )
    elo_ladder = await api.ladder(organiser, "duel", members=(ann, bob))
    for a, b in ((ann, bob), (bob, cat), (ann, cat), (ann, bob)):
        match_id = await api.pair(ladder_id, organiser, a, b)
        await play_out(api, match_id, (a, b), rng)
    match_id = await api.pair(elo_ladder, organiser, ann, bob)
    final = await play_out(api, match_id, (ann, bob), rng)
    catch_up_all(database_url)  # what a worker's runners do: the ends are in the log
    SimpleWorker(queues(redis=redis, prefix=redis_prefix), connection=redis).work(burst=True)

    board = (await api.client.get(f"/api/ladders/{ladder_id}/leaderboard")).json()
    assert board["system"] == "glicko2" and board["matches"] == 4
    for s in board["standings"]:
        assert s["system"] == "glicko2" and 0 < s["rd"] < 350
        assert s["interval"] == [s["rating"] - 2 * s["rd"], s["rating"] + 2 * s["rd"]]
        assert s["provisional"] is (s["rd"] > 110) and s["timeouts"] == 0
        assert s["wins"] + s["draws"] + s["losses"] == s["games"]
        assert len(s["trend"]) == 1  # every match in one rating period: one change
    history = (await api.client.get(f"/api/ladders/{ladder_id}/players/{ann.id}/ratings")).json()
    assert history["system"] == "glicko2" and len(history["history"]) == 3
    periods = {h["period"] for h in history["history"]}
    assert len(periods) == 1  # one day: one period, one before and one after for all
    assert {(h["before"], h["rd_before"]) for h in history["history"]} == {(1500.0, 350.0)}
    assert {(h["after"], h["rd_after"]) for h in history["history"]} == {
        (history["rating"], history["rd"])
    }

    def rated(player_id: str) -> dict:
        return next(s for s in board["standings"] if s["player_id"] == player_id)

    r = await api.client.get(
        f"/api/ladders/{ladder_id}/expected", params={"a": ann.id, "b": cat.id}
    )
    expected = r.json()
    assert expected["system"] == "glicko2"
    assert math.isclose(expected["expected_a"] + expected["expected_b"], 1.0)
    a, c = rated(ann.id), rated(cat.id)
    assert expected["expected_a"] == glicko2.expected_score(
        a["rating"], a["rd"], c["rating"], c["rd"]
    )
    # a newcomer to the ladder stands at the initial rating and RD
    newcomer = await api.register()
    r = await api.client.get(
        f"/api/ladders/{ladder_id}/expected", params={"a": newcomer.id, "b": ann.id}
    )
    assert r.json()["expected_a"] == glicko2.expected_score(1500.0, 350.0, a["rating"], a["rd"])

    elo = (
        await api.client.get(
            f"/api/ladders/{elo_ladder}/expected", params={"a": ann.id, "b": bob.id}
        )
    ).json()
    assert elo["system"] == "elo"
    winner = final["result"]["winner"]
    if winner is not None:  # the winner of the one Elo match is now expected to score more
        assert (elo["expected_a"] > 0.5) is (winner == 0)
    assert math.isclose(elo["expected_a"] + elo["expected_b"], 1.0)
    elo_board = (await api.client.get(f"/api/ladders/{elo_ladder}/leaderboard")).json()
    assert elo_board["system"] == "elo"
    assert all(s["rd"] is None and s["interval"] is None for s in elo_board["standings"])

    assert_problem(
        await api.client.get(
            f"/api/ladders/{ladder_id}/expected", params={"a": ann.id, "b": ann.id}
        ),
        400,
        "same_player",
    )
    assert_problem(
        await api.client.get(
            f"/api/ladders/{ladder_id}/expected", params={"a": ann.id, "b": "nobody"}
        ),
        404,
        "not_found",
    )
    assert_problem(
        await api.client.get(f"/api/ladders/{ladder_id}/expected", params={"a": ann.id}),
        400,
        "validation_error",
    )
    assert_problem(
        await api.client.get("/api/ladders/nope/expected", params={"a": ann.id, "b": bob.id}),
        404,
        "not_found",
    )
