"""The replay's odds (issue 27): a projection the worker keeps of every finished
match's odds at every version, estimated from the spectator's view alone, which
the win-probability route serves at once."""

from __future__ import annotations

import asyncio
import random
import threading

import psycopg
import pytest
from harness import Api, play_out
from litestar import Litestar

from service.bots.winprob import estimate, view_seed
from service.replays.store import load_logs
from workers.projections.odds import (
    REPLAY_BUDGET,
    OddsProjection,
    VersionOdds,
    odds_of_log,
    spectator_views,
)
from workers.projections.runner import Runner

pytestmark = pytest.mark.anyio


def catch_up(database_url: str) -> int:
    runner = Runner(OddsProjection(), database_url, stop=threading.Event(), sweep_at_start=False)
    try:
        return runner.catch_up()
    finally:
        runner.close()


def sweep(database_url: str) -> int:
    runner = Runner(OddsProjection(), database_url, stop=threading.Event())
    try:
        return runner.sweep()
    finally:
        runner.close()


def stored(database_url: str, match_id: str) -> list[VersionOdds]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT match_id, version, p0, p1, playouts FROM replay_odds"
            " WHERE match_id = %s ORDER BY version",
            (match_id,),
        ).fetchall()
    return [VersionOdds(*r) for r in rows]


def recomputed(database_url: str, match_id: str) -> list[VersionOdds]:
    with psycopg.connect(database_url) as conn:
        (row,) = load_logs(conn, [match_id])
    return odds_of_log(row)


async def finished_match(api: Api, seed: int) -> tuple[str, int]:
    match_id, a, b = await api.new_match("duel")
    final = await play_out(api, match_id, (a, b), random.Random(seed))
    return match_id, int(final["version"])


async def test_a_finished_match_gets_odds_at_every_version_that_a_rebuild_gives_again(
    api: Api, database_url: str
) -> None:
    match_id, last = await finished_match(api, 3)
    assert await asyncio.to_thread(catch_up, database_url) >= 1
    rows = stored(database_url, match_id)
    assert [r.version for r in rows] == list(range(1, last + 1))
    assert rows == recomputed(database_url, match_id)  # a fresh recompute: the same rows
    assert rows[-1].playouts == 0 and rows[0].playouts == REPLAY_BUDGET.playouts

    # Lost rows: the sweep estimates them again, to the same numbers.
    with psycopg.connect(database_url) as conn:
        conn.execute("DELETE FROM replay_odds")
    assert await asyncio.to_thread(sweep, database_url) == 1
    assert stored(database_url, match_id) == rows
    assert await asyncio.to_thread(catch_up, database_url) == 0  # nothing new in the log


async def test_once_caught_up_a_replay_gets_the_odds_of_each_version_at_once(
    api: Api, database_url: str
) -> None:
    match_id, last = await finished_match(api, 5)
    await asyncio.to_thread(catch_up, database_url)
    rows = {r.version: r for r in stored(database_url, match_id)}
    for version in range(1, last + 1):
        answer = await api.get(f"/api/matches/{match_id}/win-probability", None, version=version)
        assert answer.status_code == 200, (version, answer.text)
        body = answer.json()
        assert body["version"] == version
        assert tuple(body["p"]) == (rows[version].p0, rows[version].p1)
        assert body["playouts"] == rows[version].playouts


async def test_the_replay_odds_come_from_the_spectators_view_never_a_seats(
    api: Api, app: Litestar, database_url: str
) -> None:
    match_id, last = await finished_match(api, 7)
    with psycopg.connect(database_url) as conn:
        (row,) = load_logs(conn, [match_id])
    views = spectator_views(row)
    port = app.state.botplay.port
    rows = odds_of_log(row)
    for version, seen in enumerate(views, start=1):
        # The live odds' own spectator view, version by version: the same view ...
        live = await port.spectator_view(match_id, version)
        assert seen == live
        assert seen.viewer == "spectator"
        if version < last:  # ... with neither hand in it while the match was played
            assert all(s.hand is None for s in seen.seats), version
        # ... and the same estimate as from that view alone.
        p = estimate(live, REPLAY_BUDGET, view_seed(live)).p
        assert (rows[version - 1].p0, rows[version - 1].p1) == p
