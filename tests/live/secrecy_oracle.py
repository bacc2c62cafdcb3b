"""What a caller may know of a match at a moment, computed from the omniscient log.

The oracle of the secrecy tests (RULES §8): from the whole truth (every stored
event) it builds the set of card codes a viewer may have seen by version ``v``,
and whether they may know the seed. A response, frame or broker message is
then checked for every card code and seed it names: naming anything outside
that set is a leak, whatever route it took.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from schemas.cards import ALL_CARDS
from schemas.events import (
    CardPlayed,
    CardsKept,
    Event,
    HandDealt,
    MatchAnnulled,
    MatchEnded,
    RoundRevealed,
)

CARD_IN_JSON = re.compile(r'"((?:[MCWS][1-4])|Z[12])"')
"""A card code as a JSON string value: how every route names a card."""


@dataclass(frozen=True)
class Knows:
    """What one viewer may know: card codes, and whether the seed."""

    cards: frozenset[str]
    seed: bool


def over_at(events: Sequence[Event], version: int) -> bool:
    """Is the match over (ended or annulled) by ``version``?"""
    return any(isinstance(e, MatchEnded | MatchAnnulled) for e in events[:version])


def knows(events: Sequence[Event], version: int, viewer: int | str, *, hide: bool) -> Knows:
    """What ``viewer`` (a seat, ``"spectator"`` or ``"omniscient"``) may know by ``version``.

    After the end everyone knows everything, unless hands stay hidden in
    replays: then a seat knows only what it knew, a spectator the public cards,
    and only an administrator (``"omniscient"``, which the policy gives an admin
    only once the match is over) everything and the seed.
    """
    over = over_at(events, version)
    if over and (not hide or viewer == "omniscient"):
        return Knows(cards=frozenset(ALL_CARDS), seed=True)
    cards: set[str] = set()
    for event in events[:version]:
        match event:
            case HandDealt():
                cards.update(c for pair in event.tea for c in (pair.number, pair.suit))
                if viewer in (0, 1):
                    cards.update(event.hands[viewer])  # type: ignore[index]
            case CardPlayed() if event.seat == viewer:
                cards.add(event.card)
            case RoundRevealed():
                for outcome in event.outcomes:
                    for seat, card in enumerate(outcome.cards):
                        if card is not None and (outcome.shown or seat == viewer):
                            cards.add(card)
            case CardsKept() if event.seat == viewer:
                cards.update(event.cards)
            case _:
                pass
    return Knows(cards=frozenset(cards), seed=False)


def leaked(text: str, allowed: Knows, seed: str) -> list[str]:
    """The card codes (and the seed) ``text`` names that ``allowed`` does not cover."""
    named = set(CARD_IN_JSON.findall(text))
    found = sorted(named - allowed.cards)
    if not allowed.seed and seed in text:
        found.append("the seed")
    return found


def union(knowledge: Iterable[Knows]) -> Knows:
    cards: set[str] = set()
    seed = False
    for k in knowledge:
        cards |= k.cards
        seed = seed or k.seed
    return Knows(cards=frozenset(cards), seed=seed)
