"""Cards as numbers, and cyclic rank (RULES §1, §2, and "matches" in §4).

Every card code is looked up once in precomputed tables, so the hot paths
(dealing, reveals, legal moves) never parse a code.
"""

from typing import Final

from schemas.cards import ALL_CARDS, SUITS, Card, Seat, Suit, Target

SUIT_OF: Final[dict[Card, Suit | None]] = {
    card: (None if card[0] == "Z" else SUITS["MCWS".index(card[0])]) for card in ALL_CARDS
}
"""The suit of each card; None for the zero cards."""

SUIT_VALUE: Final[dict[Suit, int]] = {"matcha": 4, "chawan": 3, "water": 2, "chashaku": 1}
"""RULES §2: matcha > chawan > water > chashaku (cyclic)."""

RANK_OF: Final[dict[Card, int]] = {
    card: (0 if card[0] == "Z" else int(card[1])) for card in ALL_CARDS
}
"""The rank 1..4 of each card; 0 for the zero cards."""

_SUIT_VALUE_OF: Final[dict[Card, int]] = {
    card: (0 if suit is None else SUIT_VALUE[suit]) for card, suit in SUIT_OF.items()
}


def is_zero(card: Card) -> bool:
    return card[0] == "Z"


def beats(a: int, b: int) -> bool:
    """Cyclic order on 1..4 (ranks, or suit values): higher wins, except 1 beats 4."""
    return (a > b and not (a == 4 and b == 1)) or (a == 1 and b == 4)


def matches(card: Card, tea_card: Card, target: Target) -> bool:
    """A card matches its target's tea card: same rank on ``number``, same suit on ``suit``.

    A zero card never matches (RULES §4).
    """
    if card[0] == "Z":
        return False
    if target == "number":
        return card[1] == tea_card[1]
    return card[0] == tea_card[0]


def stronger(card0: Card, card1: Card, target: Target) -> Seat:
    """Which of two cards that both match a target wins it (0 or 1), RULES §5.

    On a number target both share the rank, so the higher suit wins; on a
    suit target both share the suit, so the higher rank wins. Two different
    matching cards never tie.
    """
    if target == "number":
        a, b = _SUIT_VALUE_OF[card0], _SUIT_VALUE_OF[card1]
    else:
        a, b = RANK_OF[card0], RANK_OF[card1]
    return 0 if beats(a, b) else 1
