"""The per-process fold cache always equals the fold of the whole log, also
when two API processes take turns on one match (each brings its cached fold
forward with the events the other appended)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from api_harness import Account, Api, recorded_times, stored_log
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.bots import heuristic_bot, random_bot
from service.bots.seat_view import bot_request
from service.engine import fold
from service.matches.folds import Folded
from service.matches.summaries import summarise
from service.settings import Settings

pytestmark = pytest.mark.anyio


async def _truth(url: str, match_id: str) -> tuple[Any, Any, int]:
    events, seed = await stored_log(url, match_id)
    assert seed is not None
    return (
        fold(events, seed, times=await recorded_times(url, match_id)),
        summarise(events),
        len(events),
    )


async def _assert_cached_equals_fold(app: Litestar, url: str, match_id: str) -> None:
    folded: Folded = await app.state.matches.current(match_id)
    state, summary, version = await _truth(url, match_id)
    assert folded.version == version
    assert folded.state == state
    assert folded.summary == summary


@pytest.mark.parametrize("ruleset", ["standard", "duel"])
async def test_two_processes_caching_one_match_agree_with_the_fold(
    api: Api, app: Litestar, settings: Settings, database_url: str, ruleset: str
) -> None:
    match_id, a, b = await api.new_match(ruleset)
    other_app = create_app(settings)
    async with AsyncTestClient(other_app) as other:
        clients = (api.client, other)
        apps = (app, other_app)
        seats: tuple[Account, Account] = (a, b)
        rng = random.Random(11)
        for turn in range(400):
            client = clients[turn % 2]  # the two processes take turns
            views = [
                (await client.get(f"/api/matches/{match_id}", headers=seats[s].auth)).json()
                for s in (0, 1)
            ]
            if views[0]["result"] is not None:
                break
            seat = next(s for s in (0, 1) if views[s]["legal_moves"])
            request = bot_request(views[seat], (random_bot, heuristic_bot)[seat], rng)
            assert request is not None
            route, body = request
            response = await client.post(
                f"/api/matches/{match_id}/{route}", json=body, headers=seats[seat].auth
            )
            assert response.status_code == 200, response.text
            for each in apps:
                await _assert_cached_equals_fold(each, database_url, match_id)
        else:
            raise AssertionError("the match did not end")
