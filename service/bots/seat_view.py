"""A seat's knowledge, rebuilt from its own ``MatchView`` JSON, as an engine
``State`` a bot (``service.bots``) can read.

For clients that play over HTTP (tests, the API bench): a bot then sees
exactly what the seat's view shows (its hand, the tea cards, its own
face-down cards, tokens, passes, whose turn). The opponent's hand and cards
are unknown and left empty; bots never read them.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec

from schemas.commands import KeepCards, Pass, PlayCard
from service.bots import Bot
from service.engine import State
from service.engine.state import slot


def seat_state(view: dict[str, Any]) -> State:
    seat = view["viewer"]
    placed: list[str | None] = [None] * 12
    for pair in view["tatami"]:
        for index, target in enumerate(("number", "suit")):
            card = pair[target]["cards"][seat]
            if card is not None:
                placed[slot(pair["round"], seat, index)] = card
    seats = view["seats"]
    hands: list[tuple[str, ...]] = [(), ()]
    hands[seat] = tuple(seats[seat]["hand"] or ())
    kept: list[tuple[str, ...] | None] = [None, None]
    if seats[seat]["kept"] is not None:
        kept[seat] = tuple(seats[seat]["kept"])
    return msgspec.convert(
        {
            "match_id": view["match_id"],
            "players": [seats[0]["player"], seats[1]["player"]],
            "ruleset": view["ruleset"],
            "phase": view["phase"],
            "hand": view["hand"],
            "round": view["round"],
            "dealer": view["dealer"],
            "to_move": view["to_move"],
            "tokens": [seats[0]["tokens"], seats[1]["tokens"]],
            "hands": hands,
            "tea": [
                {"number": p["number"]["tea_card"], "suit": p["suit"]["tea_card"]}
                for p in view["tatami"]
            ],
            "placed": placed,
            "passed": [seats[0]["passed"], seats[1]["passed"]],
            "kept": kept,
            "version": view["version"],
        },
        State,
    )


def move_request(move: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The route and body that make one of a view's ``legal_moves``; None for a
    resignation, which is no choice of play."""
    match move["type"]:
        case "play_card":
            return "play", {"card": move["card"], "target": move["target"]}
        case "pass":
            return "pass", {}
        case "keep_cards":
            return "keep", {"cards": list(move["cards"])}
        case "resign":
            return None
    raise ValueError(f"unexpected legal move {move}")


def bot_request(
    view: dict[str, Any], bot: Bot, rng: random.Random
) -> tuple[str, dict[str, Any]] | None:
    """The route (``play``/``pass``/``keep``) and body of the bot's next command,
    or None when this seat has nothing to do now."""
    if not view["legal_moves"]:
        return None
    command = bot(seat_state(view), view["viewer"], rng)
    match command:
        case PlayCard(card=card, target=target):
            return "play", {"card": card, "target": target}
        case Pass():
            return "pass", {}
        case KeepCards(cards=cards):
            return "keep", {"cards": list(cards)}
    raise ValueError(f"unexpected bot command {command}")
