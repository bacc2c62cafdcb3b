"""Whole flows through the real HTTP app, real PostgreSQL, real Redis and the
real workers: bots finish matches over HTTP, the projection runners read the
log and rate and archive, an RQ worker runs the admin's recompute, and the
endpoints show it."""

from __future__ import annotations

import copy
import math
import os
import random
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from api_harness import ADMIN_TOKEN, Account, Api, assert_problem, play_out
from litestar import Litestar
from litestar.testing import AsyncTestClient
from redis import Redis
from rq import SimpleWorker
from workers_harness import hand_elo

from service.app import create_app
from service.broker.jobs import queues
from service.replays import build_from_log
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings
from workers.projections import catch_up_all

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def make_settings(database_url: str, redis_url: str, prefix: str) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=True),
        redis=RedisSettings(url=redis_url, prefix=prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
    )


@pytest.fixture
async def api(
    database_url: str, redis_server_url: str, redis_prefix: str, conn: psycopg.Connection
) -> AsyncIterator[Api]:
    app: Litestar = create_app(make_settings(database_url, redis_server_url, redis_prefix))
    async with AsyncTestClient(app) as client:
        yield Api(client)


def run_worker(redis: Redis, prefix: str) -> None:
    """What a worker does: the projection runners catch up, then the queued jobs run."""
    catch_up_all(os.environ["DATABASE_URL"])
    SimpleWorker(queues(redis=redis, prefix=prefix), connection=redis).work(burst=True)


async def play(
    api: Api, ladder_id: str, organiser: Account, a: Account, b: Account, rng: random.Random
) -> tuple[str, int | None]:
    match_id = await api.pair(ladder_id, organiser, a, b)
    final = await play_out(api, match_id, (a, b), rng)
    return match_id, final["result"]["winner"]


async def test_ratings_and_replays_of_matches_played_over_http(
    api: Api, conn: psycopg.Connection, redis: Redis, redis_prefix: str
) -> None:
    rng = random.Random(7)
    organiser = await api.organiser()
    ladder_id = await api.ladder(organiser, "duel")
    ann, bob, cat = [await api.register() for _ in range(3)]
    for player in (ann, bob, cat):
        await api.join(ladder_id, player)
    played = []
    for a, b in ((ann, bob), (bob, cat), (cat, ann)):
        match_id, winner = await play(api, ladder_id, organiser, a, b, rng)
        played.append((match_id, a, b, winner))
    # A live match: no replay yet.
    live = await api.pair(ladder_id, organiser, ann, cat)
    assert_problem(await api.client.get(f"/api/matches/{live}/replay"), 404, "match_not_finished")

    run_worker(redis, redis_prefix)  # the runners find the three ends in the log

    ratings: dict[str, float] = {}
    games: dict[str, int] = {}
    for _, a, b, winner in played:
        score = 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
        hand_elo(ratings, games, set(), a.id, b.id, score)
    board = (await api.client.get(f"/api/ladders/{ladder_id}/leaderboard")).json()
    assert board["matches"] == 3 and board["players"] == 3
    assert [s["player_id"] for s in board["standings"]] == sorted(
        ratings, key=lambda p: (-ratings[p], p)
    )
    for rank, s in enumerate(board["standings"], start=1):
        assert s["rank"] == rank
        assert math.isclose(s["rating"], ratings[s["player_id"]], abs_tol=1e-9)
        assert s["games"] == 2 and s["provisional"] is True
        assert s["wins"] + s["draws"] + s["losses"] == 2 and len(s["trend"]) == 2
        assert math.isclose(sum(s["trend"]), s["rating"] - 1500, abs_tol=1e-9)
        assert s["name"] in {ann.name, bob.name, cat.name}

    csv_response = await api.client.get(f"/api/ladders/{ladder_id}/standings.csv")
    assert csv_response.headers["content-type"].startswith("text/csv")
    lines = csv_response.text.strip().splitlines()
    assert lines[0].startswith("rank,player_id,name,rating")
    assert lines[1].split(",")[1] == board["standings"][0]["player_id"]
    assert len(lines) == 4

    history = (await api.client.get(f"/api/ladders/{ladder_id}/players/{ann.id}/ratings")).json()
    assert [h["match_id"] for h in history["history"]] == [played[0][0], played[2][0]]
    assert [h["opponent_id"] for h in history["history"]] == [bob.id, cat.id]
    assert history["history"][1]["after"] == history["rating"]
    assert history["history"][1]["before"] == history["history"][0]["after"]

    # The replay the worker built: headers, frames, ratings before and after.
    match_id, a, b, winner = played[0]
    replay = (await api.client.get(f"/api/matches/{match_id}/replay")).json()
    headers = replay["headers"]
    assert headers["players"][0]["name"] == a.name and headers["ladder_id"] == ladder_id
    assert headers["result"] == {0: "1-0", 1: "0-1", None: "1/2-1/2"}[winner]
    assert headers["players"][0]["rating_before"] == 1500.0
    assert headers["players"][0]["rating_after"] == history["history"][0]["after"]
    assert headers["seed"] and replay["frames"] == headers["events"] > 10
    stored = conn.execute(
        "SELECT sha256, archive FROM replay_archives WHERE match_id = %s", (match_id,)
    ).fetchone()
    assert stored is not None and bytes(stored[0]).hex() == replay["sha256"]
    # A rebuild from the log gives the very same bytes.
    rebuilt = build_from_log(conn, match_id)
    assert rebuilt is not None and rebuilt.data == bytes(stored[1])

    # Frames: public to anyone (hands shown once the match is over), omniscient to admins.
    frame = (await api.client.get(f"/api/matches/{match_id}/replay/frames/2")).json()
    assert frame["n"] == 2 and frame["event"]["type"] == "hand_dealt"
    assert all(seat["hand"] is not None for seat in frame["view"]["seats"])
    assert_problem(
        await api.client.get(f"/api/matches/{match_id}/replay/frames/2?view=omniscient"),
        403,
        "forbidden",
    )
    omni = await api.client.get(
        f"/api/matches/{match_id}/replay/frames/2?view=omniscient", headers=api.admin.auth
    )
    assert omni.status_code == 200 and omni.json()["view"]["set_aside"]
    assert_problem(
        await api.client.get(f"/api/matches/{match_id}/replay/frames/999"), 404, "no_such_frame"
    )

    # Export the record, import it back: it checks out and gives the same frames.
    record = (await api.client.get(f"/api/matches/{match_id}/record")).json()
    assert len(record["events"]) == replay["frames"]
    checked = (await api.client.post("/api/records/check", json=record)).json()
    assert checked["ok"] is True, checked["problems"]
    assert checked["chain"] == checked["refold"] == checked["fairness"] == "consistent"
    replayed = checked["frames"][1]
    assert (replayed["public"] or replayed["omniscient"]) == frame["view"]
    # A record with one card changed does not.
    forged = copy.deepcopy(record)
    dealt = next(e for e in forged["events"] if e["event"]["type"] == "hand_dealt")
    hand = dealt["event"]["hands"][0]
    dealt["event"]["hands"][0] = [hand[1], hand[0], *hand[2:]]
    bad = (await api.client.post("/api/records/check", json=forged)).json()
    assert bad["ok"] is False and bad["frames"] == []
    assert any("hash does not match" in p for p in bad["problems"])
    assert_problem(
        await api.client.post("/api/records/check", content=b"{nope"), 400, "validation_error"
    )

    # The admin recompute: a job with progress, and the same ratings.
    accepted = await api.client.post(
        f"/api/admin/ladders/{ladder_id}/recompute", headers=api.admin.auth
    )
    assert accepted.status_code == 202, accepted.text
    job_url = accepted.json()["status_url"]
    assert (await api.client.get(job_url, headers=api.admin.auth)).json()["status"] == "queued"
    assert_problem(await api.client.get(job_url, headers=ann.auth), 403, "forbidden")
    run_worker(redis, redis_prefix)
    job = (await api.client.get(job_url, headers=api.admin.auth)).json()
    assert job["status"] == "finished", job
    assert job["progress"] == {"phase": "done", "done": 3, "total": 3}
    assert job["result"]["mode"] == "full"
    again = (await api.client.get(f"/api/ladders/{ladder_id}/leaderboard")).json()
    assert again["standings"] == board["standings"]
    assert_problem(
        await api.client.post(f"/api/admin/ladders/{ladder_id}/recompute", headers=ann.auth),
        403,
        "forbidden",
    )


async def test_a_ladder_that_hides_hands_keeps_them_hidden_in_its_replays(
    api: Api, conn: psycopg.Connection, redis: Redis, redis_prefix: str
) -> None:
    organiser = await api.organiser()
    ladder_id = await api.ladder(organiser, "duel", hide_hands_in_replay=True)
    a, b = await api.register(), await api.register()
    await api.join(ladder_id, a)
    await api.join(ladder_id, b)
    match_id, _ = await play(api, ladder_id, organiser, a, b, random.Random(3))
    # No worker ran: the replay is built on demand.
    replay = (await api.client.get(f"/api/matches/{match_id}/replay")).json()
    assert replay["headers"]["hide_hands_in_replay"] is True
    frame = (await api.client.get(f"/api/matches/{match_id}/replay/frames/2")).json()
    assert all(seat["hand"] is None for seat in frame["view"]["seats"])
    assert frame["event"]["hands"] == [None, None]
    omni = (
        await api.client.get(
            f"/api/matches/{match_id}/replay/frames/2?view=omniscient", headers=api.admin.auth
        )
    ).json()
    assert all(seat["hand"] for seat in omni["view"]["seats"])
    assert_problem(
        await api.client.get(f"/api/matches/{match_id}/record", headers=a.auth), 403, "forbidden"
    )
    record = await api.client.get(f"/api/matches/{match_id}/record", headers=api.admin.auth)
    assert record.status_code == 200


async def test_a_redis_outage_never_fails_a_command_and_the_runners_find_the_end_anyway(
    database_url: str, redis: Redis, redis_prefix: str, conn: psycopg.Connection
) -> None:
    down = make_settings(database_url, "redis://127.0.0.1:1/0", redis_prefix)
    async with AsyncTestClient(create_app(down)) as client:
        api = Api(client)
        organiser = await api.organiser()
        ladder_id = await api.ladder(organiser, "duel")
        a, b = await api.register(), await api.register()
        await api.join(ladder_id, a)
        await api.join(ladder_id, b)
        match_id, _ = await play(api, ladder_id, organiser, a, b, random.Random(5))
    assert redis.llen(f"rq:queue:{redis_prefix}-ratings") == 0  # nothing was queued
    found: dict[str, Any] = catch_up_all(database_url)
    assert found["archives"] == 1 and found["ratings"] == 1
    assert (
        conn.execute("SELECT count(*) FROM ratings WHERE ladder_id = %s", (ladder_id,)).fetchone()[
            0
        ]
        == 2
    )
    assert conn.execute("SELECT 1 FROM replay_archives WHERE match_id = %s", (match_id,)).fetchone()
    assert catch_up_all(database_url) == {
        "archives": 0,
        "ratings": 0,
        "summaries": 0,
        "flags": 0,
        "odds": 0,
    }
