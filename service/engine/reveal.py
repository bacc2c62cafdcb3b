"""Revealing a round (RULES §5): the outcome beside each target, and token supply.

Number target first, then suit target. The token at stake is always of the
tea card's suit. A token due from an empty supply is recorded as due and not
given (decision in RULES §5).
"""

from collections.abc import Sequence
from functools import cache

from schemas.cards import TOKEN_KINDS, Card, RoundNo, Seat, Target, TokenKind
from schemas.events import RoundRevealed, TargetOutcome, TeaPair, TokenAward
from schemas.rules import Ruleset
from schemas.views import Tokens
from service.engine.rank import SUIT_OF, matches, stronger

_NOTHING: tuple[TokenAward, ...] = ()
_AWARD: tuple[dict[TokenKind, TokenAward], dict[TokenKind, TokenAward]] = (
    {kind: TokenAward(seat=0, kind=kind) for kind in TOKEN_KINDS},
    {kind: TokenAward(seat=1, kind=kind) for kind in TOKEN_KINDS},
)
"""Awards are immutable: build each of the ten once."""


@cache
def outcome(tgt: Target, tea_card: Card, card0: Card | None, card1: Card | None) -> TargetOutcome:
    """What the rules award beside one target (before looking at the supply).

    Worked out once per situation and then looked up (a third of the cost):
    a ``TargetOutcome`` is immutable, and a game has 9,824 situations (target,
    tea card, each seat's card or none), about 3 MB when all have been seen.
    """
    kind = SUIT_OF[tea_card]
    assert kind is not None, "tea cards are never zero cards"
    if card0 is None and card1 is None:
        return TargetOutcome(
            target=tgt, tea_card=tea_card, cards=(None, None), shown=False,
            matched=(None, None), winner=None, due=_NOTHING, given=_NOTHING,
        )  # fmt: skip
    if card0 is None or card1 is None:
        # A lone card wins whether or not it matches, and stays face down.
        lone: Seat = 0 if card1 is None else 1
        due: tuple[TokenAward, ...] = (_AWARD[lone][kind],)
        return TargetOutcome(
            target=tgt, tea_card=tea_card, cards=(card0, card1), shown=False,
            matched=(None, None), winner=lone, due=due, given=due,
        )  # fmt: skip
    m0 = matches(card0, tea_card, tgt)
    m1 = matches(card1, tea_card, tgt)  # (a zero card never matches)
    winner: Seat | None
    if m0 and m1:
        winner = stronger(card0, card1, tgt)
        due = (_AWARD[winner][kind],)
    elif m0 or m1:
        winner = 0 if m0 else 1
        loser: Seat = 1 if winner == 0 else 0
        due = (_AWARD[winner][kind], _AWARD[loser]["chasen"])
    else:
        winner = None
        due = _NOTHING
    return TargetOutcome(
        target=tgt, tea_card=tea_card, cards=(card0, card1), shown=True,
        matched=(m0, m1), winner=winner, due=due, given=due,
    )  # fmt: skip


def _give(o: TargetOutcome, left: dict[TokenKind, int]) -> TargetOutcome:
    """Keep in ``given`` only the tokens the supply still holds, taking them from ``left``."""
    if not o.due:
        return o
    given: list[TokenAward] = []
    for award in o.due:
        if left[award.kind] > 0:
            left[award.kind] -= 1
            given.append(award)
    if len(given) == len(o.due):
        return o
    return TargetOutcome(
        target=o.target, tea_card=o.tea_card, cards=o.cards, shown=o.shown,
        matched=o.matched, winner=o.winner, due=o.due, given=tuple(given),
    )  # fmt: skip


def supply_left(tokens: tuple[Tokens, Tokens], ruleset: Ruleset) -> dict[TokenKind, int]:
    """Tokens of each kind still in the supply."""
    a, b = tokens
    n = ruleset.token_supply
    return {
        "matcha": n - a.matcha - b.matcha,
        "chawan": n - a.chawan - b.chawan,
        "water": n - a.water - b.water,
        "chashaku": n - a.chashaku - b.chashaku,
        "chasen": n - a.chasen - b.chasen,
    }


def reveal(
    hand: int,
    round_no: RoundNo,
    tea: TeaPair,
    placed: Sequence[Card | None],
    tokens: tuple[Tokens, Tokens],
    ruleset: Ruleset,
) -> RoundRevealed:
    """Reveal a round. ``placed`` is (seat 0 number, seat 0 suit, seat 1 number, seat 1 suit)."""
    number = outcome("number", tea.number, placed[0], placed[2])
    suit = outcome("suit", tea.suit, placed[1], placed[3])
    # A round awards at most two tokens of one kind: while the two seats hold
    # at most ``token_supply - 2`` of every kind, nothing due can run short.
    a, b = tokens
    safe = ruleset.token_supply - 2
    if (number.due or suit.due) and (
        a.matcha + b.matcha > safe
        or a.chawan + b.chawan > safe
        or a.water + b.water > safe
        or a.chashaku + b.chashaku > safe
        or a.chasen + b.chasen > safe
    ):
        left = supply_left(tokens, ruleset)
        number = _give(number, left)
        suit = _give(suit, left)
    return RoundRevealed(hand=hand, round=round_no, outcomes=(number, suit))
