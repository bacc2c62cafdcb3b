"""A player cannot learn the opponent's hand or face-down cards, nor the
set-aside cards, through any endpoint: views, logs, match lists or error
messages. Checked on the raw response bytes against the hidden cards known
from the omniscient fold, after every command of the first hand (no card
can have been seen in an earlier hand, so every hidden card must be absent)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from api_harness import Account, Api, omniscient_state

from schemas.events import RoundRevealed
from service.bots import heuristic_bot, random_bot
from service.bots.seat_view import bot_request
from service.engine import State

pytestmark = pytest.mark.anyio


def hidden_from(state: State, seat: int | None, reveals: list[RoundRevealed]) -> set[str]:
    """Cards ``seat`` (None: a spectator) may not know now, during hand 1."""
    shown = {
        card
        for reveal in reveals
        for outcome in reveal.outcomes
        if outcome.shown
        for card in outcome.cards
        if card is not None
    }
    others = [s for s in (0, 1) if s != seat]
    hidden = set(state.set_aside)
    for s in others:
        hidden |= set(state.hands[s])
        hidden |= {
            card
            for index, card in enumerate(state.placed)
            if card is not None and (index // 2) % 2 == s and card not in shown
        }
    return hidden


async def responses_for(api: Api, match_id: str, account: Account | None) -> list[bytes]:
    """Every read a caller can make about this match, as raw bytes."""
    headers = account.auth if account else {}
    paths = [
        f"/api/matches/{match_id}",
        f"/api/matches/{match_id}/events",
        f"/api/matches/{match_id}/events?after=2&limit=5",
        "/api/matches",
        "/api/matches?status=live",
    ]
    if account is not None:
        paths.append(f"/api/matches?player={account.id}")
    out = []
    for path in paths:
        response = await api.client.get(path, headers=headers)
        assert response.status_code == 200, response.text
        out.append(response.content)
    return out


def assert_absent(blobs: list[bytes], hidden: set[str], who: str) -> None:
    for blob in blobs:
        for card in hidden:
            assert f'"{card}"'.encode() not in blob, f"{who} can see hidden {card}: {blob[:300]!r}"


async def test_no_endpoint_shows_a_hidden_card(api: Api, database_url: str) -> None:
    match_id, a, b = await api.new_match()
    seats = (a, b)
    rng = random.Random(7)
    bots = (random_bot, heuristic_bot)
    reveals: list[RoundRevealed] = []
    checked = 0
    for _ in range(200):
        truth = await omniscient_state(database_url, match_id)
        if truth.hand != 1 or truth.ended:
            break
        if truth.last_reveal is not None and truth.last_reveal not in reveals:
            reveals.append(truth.last_reveal)
        for seat in (0, 1):
            hidden = hidden_from(truth, seat, reveals)
            assert hidden, "there is always something hidden during a hand"
            assert_absent(await responses_for(api, match_id, seats[seat]), hidden, f"seat {seat}")
        assert_absent(
            await responses_for(api, match_id, None), hidden_from(truth, None, reveals), "spectator"
        )
        checked += 1
        views = [await api.view(match_id, seats[s]) for s in (0, 1)]
        mover = next(s for s in (0, 1) if views[s]["legal_moves"])
        view: dict[str, Any] = views[mover]
        request = bot_request(view, bots[mover], rng)
        assert request is not None
        route, body = request
        response = await api.client.post(
            f"/api/matches/{match_id}/{route}", json=body, headers=seats[mover].auth
        )
        assert response.status_code == 200, response.text
        after = await omniscient_state(database_url, match_id)
        if after.ended or after.hand != 1:
            continue  # the end reveals everything; a new hand may redeal seen cards
        latest = [after.last_reveal] if after.last_reveal else []
        assert_absent(
            [response.content], hidden_from(after, mover, reveals + latest), "a command response"
        )
    assert checked >= 4


async def test_error_messages_do_not_tell_where_a_card_is(api: Api, database_url: str) -> None:
    """Naming a card the caller does not hold gives the same sentence whether the
    opponent holds it, it is set aside, or it lies face up as a tea card."""
    match_id, a, b = await api.new_match()
    truth = await omniscient_state(database_url, match_id)
    mover = truth.to_move
    assert mover is not None
    caller = (a, b)[mover]
    elsewhere = {
        "opponent's hand": truth.hands[1 - mover][0],
        "set aside": truth.set_aside[0],
        "tea card": truth.tea[0].number,
    }
    answers = {}
    for where, card in elsewhere.items():
        response = await api.client.post(
            f"/api/matches/{match_id}/play",
            json={"card": card, "target": "number"},
            headers=caller.auth,
        )
        assert response.status_code == 422, response.text
        answers[where] = response.content.replace(card.encode(), b"<card>")
    assert len(set(answers.values())) == 1, answers
