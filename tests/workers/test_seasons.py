"""Seasons on a ladder, through the real HTTP app, PostgreSQL, Redis and RQ: an
organiser schedules and ends seasons, the soft reset is part of the ratings
fold (a recompute gives the same bits), standings are frozen as an event, the
scheduler ends a season on its date; every bad request is a problem+json and
leaves the season stream unchanged."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from api_harness import ADMIN_TOKEN, Account, Api, assert_problem
from litestar.testing import AsyncTestClient
from psycopg.rows import dict_row
from redis import Redis
from rq import SimpleWorker
from rq.scheduler import RQScheduler
from test_ratings_projection import glicko_histories, glicko_state
from workers_harness import histories, insert_result, table

from schemas.seasons import LadderEvent, StandingsFrozen
from service.app import create_app
from service.broker.jobs import queues
from service.seasons import engine
from service.seasons.stream import LADDER_EVENTS
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings
from service.store.ops import run
from workers.ratings import apply_ladder

pytestmark = pytest.mark.anyio


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


def stream_rows(conn: psycopg.Connection, ladder_id: str) -> list[dict[str, object]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT ladder_id, version, type, data::text AS data, actor, recorded_at,"
            " prev_hash, hash FROM ladder_events WHERE ladder_id = %s ORDER BY version",
            (ladder_id,),
        ).fetchall()


def ladder_events(conn: psycopg.Connection, ladder_id: str) -> list[LadderEvent]:
    return [r.event for r in run(conn, LADDER_EVENTS.load(ladder_id))]


async def season(api: Api, ladder_id: str, who: Account, **body: object) -> dict:
    r = await api.post(f"/api/ladders/{ladder_id}/seasons", who, body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def play(
    conn: psycopg.Connection,
    ladder_id: str,
    players: list[str],
    n: int,
    at: datetime,
    offset: int = 0,
) -> None:
    for i in range(offset, offset + n):
        a, b = players[i % len(players)], players[(i * 2 + 1) % len(players)]
        if a == b:
            b = players[(i + 1) % len(players)]
        insert_result(
            conn,
            ladder_id,
            a,
            b,
            (0, 1, None, 0)[i % 4],
            at + timedelta(minutes=7 * i),
            reason="timeout" if i % 5 == 2 else None,
        )


@pytest.mark.parametrize("system", ["elo", "glicko2"])
async def test_seasons_soft_reset_in_the_fold_freeze_standings_and_recompute_bit_for_bit(
    api: Api, conn: psycopg.Connection, system: str
) -> None:
    organiser = await api.organiser()
    players = [await api.register() for _ in range(4)]
    ladder_id = await api.ladder(
        organiser,
        members=players,
        rating_system=system,
        rating={"rating_period_s": 3600} if system == "glicko2" else {},
    )
    ids = [p.id for p in players]
    now = datetime.now(UTC)
    play(conn, ladder_id, ids, 10, now - timedelta(days=2))
    assert apply_ladder(conn, ladder_id)["mode"] == "full"
    before_reset = table(conn, ladder_id)

    one = await season(
        api,
        ladder_id,
        organiser,
        name="Spring",
        soft_reset=0.5,
        ends_at=(now + timedelta(days=30)).isoformat(),
    )
    assert one["phase"] == "running" and one["start_position"] is not None
    play(conn, ladder_id, ids, 12, now - timedelta(days=1), offset=10)
    assert apply_ladder(conn, ladder_id)["mode"] == "incremental"
    # the first match of the season started from the soft reset: halfway back to 1500
    hist = histories(conn, ladder_id)
    for player in ids:
        positions, befores = hist[player][0], hist[player][1]
        k = next(k for k, p in enumerate(positions) if p > one["start_position"])
        if system == "elo":
            assert befores[k] == 1500.0 + 0.5 * (before_reset[player][0] - 1500.0)

    r = await api.post(f"/api/ladders/{ladder_id}/seasons/{one['season_id']}/end", organiser)
    assert r.status_code == 200, r.text
    ended = r.json()
    assert ended["phase"] == "ended" and ended["ended_early"] is True
    apply_ladder(conn, ladder_id)
    page = (await api.get(f"/api/ladders/{ladder_id}/seasons/{one['season_id']}", None)).json()
    assert page["frozen"] is True and page["season"]["phase"] == "frozen"
    standings = page["standings"]
    assert [s["rank"] for s in standings] == list(range(1, len(standings) + 1))
    assert sum(s["games"] for s in standings) == 2 * 12
    ratings = [s["rating"] for s in standings]
    assert ratings == sorted(ratings, reverse=True)
    current = table(conn, ladder_id)
    assert {s["player_id"]: s["rating"] for s in standings} == {
        p: current[p][0] for p in ids if any(s["player_id"] == p for s in standings)
    }
    if system == "glicko2":
        assert all(s["rd"] is not None for s in standings)

    # a player's ratings within the season: only that season's matches
    history = (
        await api.get(
            f"/api/ladders/{ladder_id}/seasons/{one['season_id']}/players/{ids[0]}/ratings", None
        )
    ).json()["history"]
    assert history and all(
        one["start_position"] < h["position"] <= ended["end_position"] for h in history
    )

    # the next season, and results after it; then the whole ladder from the log
    two = await season(
        api,
        ladder_id,
        organiser,
        name="Summer",
        soft_reset=0.25,
        ends_at=(now + timedelta(days=60)).isoformat(),
    )
    play(conn, ladder_id, ids, 9, now - timedelta(hours=3), offset=30)
    apply_ladder(conn, ladder_id)
    if system == "elo":  # losses on time are counted (a draw on time is no loss)
        on_time = [i for i in (*range(22), *range(30, 39)) if i % 5 == 2 and i % 4 != 2]
        assert sum(row[8] for row in table(conn, ladder_id).values()) == len(on_time) == 5
    snapshot = (
        (glicko_state(conn, ladder_id), glicko_histories(conn, ladder_id))
        if system == "glicko2"
        else (table(conn, ladder_id), histories(conn, ladder_id))
    )
    frozen_events = [e for e in ladder_events(conn, ladder_id) if isinstance(e, StandingsFrozen)]
    assert apply_ladder(conn, ladder_id, full=True)["mode"] == "full"
    again = (
        (glicko_state(conn, ladder_id), glicko_histories(conn, ladder_id))
        if system == "glicko2"
        else (table(conn, ladder_id), histories(conn, ladder_id))
    )
    assert again == snapshot
    # a recompute never freezes a season twice
    assert [
        e for e in ladder_events(conn, ladder_id) if isinstance(e, StandingsFrozen)
    ] == frozen_events
    seasons = (await api.get(f"/api/ladders/{ladder_id}/seasons", None)).json()
    assert [s["name"] for s in seasons] == ["Spring", "Summer"]
    assert [s["phase"] for s in seasons] == ["frozen", "running"]
    assert two["season_id"] == seasons[1]["season_id"]
    assert LADDER_EVENTS.verify(stream_rows(conn, ladder_id)) is None


async def test_bad_season_requests_are_refused_by_name_and_change_nothing(
    api: Api, conn: psycopg.Connection
) -> None:
    organiser = await api.organiser()
    stranger = await api.organiser()
    player = await api.register()
    ladder_id = await api.ladder(organiser)
    now = datetime.now(UTC)
    first = await season(
        api, ladder_id, organiser, name="One", ends_at=(now + timedelta(days=10)).isoformat()
    )
    rows = stream_rows(conn, ladder_id)
    base = f"/api/ladders/{ladder_id}/seasons"
    cases = [
        (
            organiser,
            {"name": "Two", "ends_at": (now + timedelta(days=5)).isoformat()},
            409,
            "season_overlap",
        ),
        (
            organiser,
            {
                "name": "Two",
                "starts_at": (now + timedelta(days=40)).isoformat(),
                "ends_at": (now + timedelta(days=20)).isoformat(),
            },
            400,
            "season_dates",
        ),
        (
            organiser,
            {"name": "Two", "ends_at": (now - timedelta(days=1)).isoformat()},
            400,
            "season_dates",
        ),
        (
            organiser,
            {"name": "Two", "ends_at": (now + timedelta(days=50)).isoformat(), "soft_reset": 1.5},
            400,
            "validation_error",
        ),
        (
            organiser,
            {"name": "Two", "ends_at": (now + timedelta(days=50)).isoformat(), "reset": 0.5},
            400,
            "validation_error",
        ),
        (
            stranger,
            {"name": "Two", "ends_at": (now + timedelta(days=50)).isoformat()},
            403,
            "forbidden",
        ),
        (
            player,
            {"name": "Two", "ends_at": (now + timedelta(days=50)).isoformat()},
            403,
            "forbidden",
        ),
    ]
    for who, body, status, code in cases:
        problem = assert_problem(await api.post(base, who, body), status, code)
        assert problem["detail"]
    assert_problem(await api.post(f"{base}/nope/end", organiser), 404, "no_such_season")
    r = await api.post(f"{base}/{first['season_id']}/end", organiser)
    assert r.status_code == 200
    rows = stream_rows(conn, ladder_id)
    assert_problem(
        await api.post(f"{base}/{first['season_id']}/end", organiser), 409, "season_ended"
    )
    assert_problem(await api.get(f"{base}/nope", None), 404, "no_such_season")
    assert_problem(await api.get("/api/ladders/nope/seasons", None), 404, "not_found")
    assert stream_rows(conn, ladder_id) == rows


async def test_a_season_ends_by_itself_on_its_date_through_rqs_scheduler(
    api: Api, conn: psycopg.Connection, redis: Redis, redis_prefix: str
) -> None:
    organiser = await api.organiser()
    players = [await api.register() for _ in range(2)]
    ladder_id = await api.ladder(organiser, members=players)
    ends_at = datetime.now(UTC) + timedelta(seconds=2)
    started = await season(api, ladder_id, organiser, name="Sprint", ends_at=ends_at.isoformat())
    assert started["phase"] == "running"
    insert_result(conn, ladder_id, players[0].id, players[1].id, 0, datetime.now(UTC))
    scheduled = redis.zcard(f"rq:scheduled:{redis_prefix}-ratings")
    assert scheduled == 1  # move_seasons at the end date
    ratings_queue = queues(redis=redis, prefix=redis_prefix)[0]
    job_id = ratings_queue.scheduled_job_registry.get_job_ids()[0]
    assert ratings_queue.fetch_job(job_id).func_name == "workers.ratings.move_seasons"
    # RQ's scheduler (what `matcha worker` runs, with_scheduler=True) moves the
    # job to the queue once its time has come; a burst worker then runs it
    scheduler = RQScheduler([ratings_queue], connection=redis)
    deadline = time.monotonic() + 30
    phase = "running"
    while phase != "frozen" and time.monotonic() < deadline:
        time.sleep(0.3)
        if datetime.now(UTC) < ends_at:
            continue
        assert scheduler.acquire_locks()
        scheduler.enqueue_scheduled_jobs()
        scheduler.release_locks()
        SimpleWorker([ratings_queue], connection=redis).work(burst=True)
        state = engine.fold(ladder_events(conn, ladder_id))
        phase = state.seasons[0].phase
    assert phase == "frozen"
    season_state = state.seasons[0]
    assert season_state.ended_at is not None and season_state.ended_at >= ends_at
    assert season_state.ended_early is False
    page = (await api.get(f"/api/ladders/{ladder_id}/seasons/{started['season_id']}", None)).json()
    assert [s["games"] for s in page["standings"]] == [1, 1]
    assert math.isclose(page["standings"][0]["rating"], 1520.0)


async def test_a_season_whose_date_passed_while_no_job_ran_is_moved_by_the_ratings_job(
    api: Api, conn: psycopg.Connection
) -> None:
    # The scheduled job was lost (Redis emptied): the catch-up finds the ladder,
    # and its next ratings job ends and freezes the season.
    from workers.ratings.seasons import due_ladders

    organiser = await api.organiser()
    ladder_id = await api.ladder(organiser)
    other = await api.ladder(organiser)
    now = datetime.now(UTC)
    await season(
        api, ladder_id, organiser, name="Short", ends_at=(now + timedelta(hours=1)).isoformat()
    )
    await season(api, other, organiser, name="Long", ends_at=(now + timedelta(days=9)).isoformat())
    later = now + timedelta(hours=2)
    assert due_ladders(conn, now) == []
    assert due_ladders(conn, later) == [ladder_id]
    from workers.ratings import seasons as season_jobs

    assert season_jobs.advance(conn, ladder_id, later)[0].startswith("EndSeason")
    apply_ladder(conn, ladder_id)
    assert [s.phase for s in engine.fold(ladder_events(conn, ladder_id)).seasons] == ["frozen"]
    assert due_ladders(conn, later) == []
    assert season_jobs.advance(conn, ladder_id, later) == []  # nothing due twice
