"""The spectators' win probability over HTTP: from the spectator's view alone,
after each event, held back like the view, and rebuilt from the log."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from harness import Account, Api, play_out
from litestar import Litestar

from service.botplay.odds import OddsStore, StoredOdds
from service.bots import random_bot
from service.bots.search import Budget
from service.bots.seat_view import bot_request
from service.bots.winprob import estimate, view_seed
from service.engine import fold, view

pytestmark = pytest.mark.anyio

WAIT_S = 60.0
BUDGET = Budget(playouts=40)  # the tests' MATCHA_WINPROB_PLAYOUTS, no ceiling


async def odds(
    api: Api,
    match_id: str,
    who: Account | None = None,
    *,
    version: int | None = None,
    at_least: int = 1,
) -> dict[str, Any]:
    """Ask until an estimate of at least version ``at_least`` is served."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    params = {} if version is None else {"version": version}
    while True:
        response = await api.get(f"/api/matches/{match_id}/win-probability", who, **params)
        if response.status_code == 200 and response.json()["version"] >= at_least:
            return dict(response.json())
        assert response.status_code in (200, 404), response.text
        if response.status_code == 404:
            assert response.json()["code"] == "estimate_pending", response.text
        assert loop.time() < deadline, "no estimate in time"
        await asyncio.sleep(0.02)


async def rebuilt(app: Litestar, match_id: str, version: int) -> tuple[float, float]:
    """The estimate at ``version`` computed again from the log: a live spectator's view."""
    stored = await app.state.matches.log(match_id)
    seed = (await app.state.matches.current(match_id)).state.seed
    state = fold([s.event for s in stored[:version]], seed)
    return estimate(
        view(state, "spectator", version=version),
        BUDGET,
        view_seed(view(state, "spectator", version=version)),
    ).p


async def test_spectators_get_each_seats_chance_which_the_log_rebuilds_exactly(
    api: Api, app: Litestar
) -> None:
    match_id, a, b = await api.new_match("duel")
    first = await odds(api, match_id, at_least=2)
    assert first["version"] == 2 and first["visible_version"] == 2
    p0, p1 = first["p"]
    assert 0 <= p0 <= 1 and 0 <= p1 <= 1 and first["draw"] == pytest.approx(1 - p0 - p1)
    assert tuple(first["p"]) == await rebuilt(app, match_id, 2)

    # A few moves later: the estimate follows the match.
    seen = await api.view(match_id, a)
    mover = (a, b)[seen["to_move"]]
    card = (await api.view(match_id, mover))["seats"][seen["to_move"]]["hand"][0]
    moved = await api.post(
        f"/api/matches/{match_id}/play", mover, {"card": card, "target": "number"}
    )
    assert moved.status_code == 200, moved.text
    later = await odds(api, match_id, at_least=3)
    assert later["version"] == 3
    assert tuple(later["p"]) == await rebuilt(app, match_id, 3)


async def test_the_players_get_no_odds_while_they_play_and_the_result_after(api: Api) -> None:
    match_id, a, b = await api.new_match("duel")
    for player in (a, b):
        refused = await api.get(f"/api/matches/{match_id}/win-probability", player)
        assert refused.status_code == 403
        assert refused.json()["code"] == "no_odds_for_players"
    final = await play_out(api, match_id, (a, b), random.Random(2))
    winner = final["result"]["winner"]
    last = await odds(api, match_id, a, at_least=final["version"])
    assert last["playouts"] == 0
    assert last["p"] == [float(winner == 0), float(winner == 1)]

    # The replay's bar: the estimate as it stood after an earlier event.
    earlier = await odds(api, match_id, version=3, at_least=3)
    assert earlier["version"] == 3 and earlier["playouts"] > 0


async def test_a_spectator_delay_holds_the_odds_back_like_the_view(api: Api, app: Litestar) -> None:
    match_id, a, b = await api.new_match("duel", spectator_delay_s=3600)
    seen = await api.view(match_id, a)
    mover = (a, b)[seen["to_move"]]
    assert (await api.post(f"/api/matches/{match_id}/pass", mover)).status_code == 200
    held = await odds(api, match_id)
    assert held["visible_version"] == 1 and held["version"] == 1
    assert held["p"][0] == held["p"][1], "before the deal nothing tells the seats apart"
    again = await api.get(f"/api/matches/{match_id}/win-probability", None, version=3)
    assert again.json()["version"] == 1


async def test_an_unknown_match_has_no_odds(api: Api) -> None:
    response = await api.get("/api/matches/no-such-match/win-probability", None)
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    bad = await api.get("/api/matches/no-such-match/win-probability", None, version=0)
    assert bad.status_code == 400


async def test_without_redis_the_odds_are_kept_in_the_process() -> None:
    from datetime import UTC, datetime

    store = OddsStore(None, "p", 60)
    for version in (2, 5, 9):
        await store.put(
            "m",
            StoredOdds(version=version, p=(0.5, 0.4), playouts=10, computed_at=datetime.now(UTC)),
        )
    assert (await store.latest("m", 8)).version == 5  # type: ignore[union-attr]
    assert await store.latest("m", 1) is None
    assert await store.latest("other", 9) is None


async def test_a_match_nobody_watches_costs_no_estimate_until_somebody_asks(
    api: Api, app: Litestar
) -> None:
    odds_service = app.state.botplay.odds
    before = odds_service.estimates
    match_id, a, b = await api.new_match("duel")
    rng = random.Random(5)
    for _ in range(6):  # six moves, nobody watching
        seen = await api.view(match_id, a)
        seat = seen["to_move"]
        if seat is None:
            break
        mover = (a, b)[seat]
        route, body = bot_request(await api.view(match_id, mover), random_bot, rng)  # type: ignore[misc]
        assert (await api.post(f"/api/matches/{match_id}/{route}", mover, body)).status_code == 200
    assert odds_service.estimates == before
    asked = await api.get(f"/api/matches/{match_id}/win-probability", None)
    assert asked.status_code in (200, 404)
    served = await odds(api, match_id)
    assert odds_service.estimates == before + 1
    assert served["version"] == served["visible_version"]
