"""Practice against a bot through the real API: the bot plays its seat from its
own view, through the same match core as a person, unrated."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from harness import Account, Api
from litestar import Litestar

from schemas.commands import KeepCards, Pass, PlayCard
from schemas.events import CardPlayed, CardsKept, Passed
from service.botplay.driver import move_seed
from service.bots import random_bot
from service.bots.levels import LEVELS
from service.bots.search import search
from service.bots.seat_view import bot_request
from service.engine import fold, view

pytestmark = pytest.mark.anyio

WAIT_S = 60.0


async def practice(api: Api, who: Account, **body: Any) -> dict[str, Any]:
    response = await api.post("/api/practice", who, body)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def settled(app: Litestar) -> None:
    """Wait until no bot task runs. The app lives in the test client's portal thread,
    so this polls instead of awaiting the app's own tasks."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while app.state.botplay.driver.busy:
        assert loop.time() < deadline, "the bot is still thinking"
        await asyncio.sleep(0.01)


def in_app(api: Api, function: Any, *args: Any) -> Any:
    """Run ``await function(*args)`` in the app's event loop (the client's portal)."""
    return api.client.blocking_portal.call(function, *args)  # type: ignore[attr-defined]


async def play_against_the_bot(
    api: Api, app: Litestar, match_id: str, me: Account, rng: random.Random
) -> dict[str, Any]:
    """Play my seat with the random bot until the match ends; the bot plays itself."""
    for _ in range(2000):
        await settled(app)
        seen = await api.view(match_id, me)
        if seen["result"] is not None:
            return seen
        request = bot_request(seen, random_bot, rng)
        assert request is not None, "neither the bot nor I can move"
        route, body = request
        body["expected_version"] = seen["version"]
        response = await api.post(f"/api/matches/{match_id}/{route}", me, body)
        assert response.status_code == 200, response.text
    raise AssertionError("the practice match did not end")


@pytest.mark.parametrize("ruleset", ["duel", "standard"])
async def test_a_player_finishes_an_unrated_match_against_the_bot_which_moves_by_itself(
    api: Api, app: Litestar, ruleset: str
) -> None:
    me = await api.register()
    started = await practice(api, me, level="beginner", ruleset=ruleset)
    assert started["rated"] is False and started["bot"]["level"] == "beginner"
    match_id, bot_id = started["match_id"], started["bot"]["player_id"]
    assert started["players"][started["seat"]] == me.id
    assert started["players"][1 - started["seat"]] == bot_id

    final = await play_against_the_bot(api, app, match_id, me, random.Random(4))
    assert final["result"]["reason"] in {"qualified", "comparison", "hand_limit"}

    log = (await api.get(f"/api/matches/{match_id}/events", me)).json()
    actors = {e["actor"] for e in log if e["event"]["type"] in {"card_played", "cards_kept"}}
    assert bot_id in actors, "the bot's commands are its own in the log"
    listed = (await api.get("/api/matches", None, player=bot_id)).json()
    assert [(m["match_id"], m["ladder_id"], m["status"]) for m in listed] == [
        (match_id, None, "finished")
    ]


async def test_every_move_of_the_bot_is_what_its_search_finds_from_its_own_seats_view(
    api: Api, app: Litestar
) -> None:
    me = await api.register()
    started = await practice(api, me, level="beginner", ruleset="duel", seat=1)
    match_id, bot_id = started["match_id"], started["bot"]["player_id"]
    await play_against_the_bot(api, app, match_id, me, random.Random(8))

    stored = await app.state.matches.log(match_id)
    seed = (await app.state.matches.current(match_id)).state.seed
    events = [s.event for s in stored]
    bot_seat = events[0].players.index(bot_id)  # type: ignore[union-attr]
    assert bot_seat == 0
    checked = 0
    for i, row in enumerate(stored):
        event = row.event
        chosen = isinstance(event, CardPlayed | CardsKept) or (
            isinstance(event, Passed) and not event.automatic
        )
        if row.actor != bot_id or not chosen:
            continue  # the person's commands, and the consequences of any
        assert event.seat == bot_seat  # type: ignore[union-attr]
        # A command's own event comes first in its batch: it was chosen at version i.
        seen = view(fold(events[:i], seed), bot_seat)
        command = search(seen, LEVELS["beginner"].budget, move_seed(match_id, i)).command
        match event:
            case CardPlayed():
                assert command == PlayCard(seat=bot_seat, card=event.card, target=event.target)
            case Passed():
                assert command == Pass(seat=bot_seat)
            case CardsKept():
                assert isinstance(command, KeepCards) and set(command.cards) == set(event.cards)
        checked += 1
    assert checked >= 3


async def test_the_bots_are_listed_weakest_first_and_have_no_rights(api: Api) -> None:
    bots = (await api.get("/api/bots", None)).json()
    assert [b["level"] for b in bots] == list(LEVELS)
    assert [b["playouts"] for b in bots] == sorted(b["playouts"] for b in bots)
    assert all(b["player_id"].startswith("bot-") for b in bots)


async def test_a_practice_request_is_checked_and_refused_clearly(api: Api) -> None:
    me = await api.register()
    anonymous = await api.post("/api/practice", None, {"level": "casual"})
    assert anonymous.status_code == 401
    wrong = await api.post("/api/practice", me, {"level": "grandmaster"})
    assert wrong.status_code == 400
    assert wrong.headers["content-type"].startswith("application/problem+json")
    assert "level" in wrong.json()["detail"]
    extra = await api.post("/api/practice", me, {"level": "casual", "colour": "green"})
    assert extra.status_code == 400
    listed = (await api.get("/api/matches", None, player=me.id)).json()
    assert listed == [], "a refused request starts nothing"


async def test_a_player_may_have_only_a_few_unfinished_practice_matches(
    api: Api, app: Litestar
) -> None:
    me = await api.register()
    limit = app.state.botplay.settings.live_practice_per_player
    for _ in range(limit):
        await practice(api, me, level="beginner", ruleset="duel")
    refused = await api.post("/api/practice", me, {"level": "beginner"})
    assert refused.status_code == 409
    assert refused.json()["code"] == "too_many_practice_matches"
    first = (await api.get("/api/matches", None, player=me.id)).json()[-1]["match_id"]
    assert (await api.post(f"/api/matches/{first}/resign", me)).status_code == 200
    await practice(api, me, level="beginner", ruleset="duel")


async def test_a_bot_left_to_move_is_found_by_the_sweep(api: Api, app: Litestar) -> None:
    driver = app.state.botplay.driver
    # The process that started the match stopped before its bot moved: no hook ran.
    port = app.state.botplay.port
    port.off_commit(driver.after_commit)
    for _ in range(20):  # until the bot (seat 0) deals, and so moves first
        me = await api.register()
        started = await practice(api, me, level="casual", ruleset="duel", seat=1)
        seen = await api.view(started["match_id"], me)
        if seen["to_move"] == 0:
            break
    port.on_commit(driver.after_commit)
    match_id = started["match_id"]
    assert (seen["version"], seen["to_move"]) == (2, 0), "the bot has not moved"

    assert in_app(api, driver.sweep, 0) >= 1
    await settled(app)
    after = await api.view(match_id, me)
    assert after["version"] > 2 and after["to_move"] == 1
