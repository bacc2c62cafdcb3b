"""Winning (RULES §6, §9): who qualifies, the comparison, the hand limit."""

from typing import Final

from schemas.cards import Seat
from schemas.rules import Ruleset
from schemas.views import Tokens

NO_WINNER: Final[tuple[Seat | None, bool]] = (None, False)
"""What ``check_win`` answers when play goes on without a comparison."""


def qualifies(tokens: Tokens, ruleset: Ruleset) -> bool:
    """Enough of one suit, enough chasen, or (where the ruleset allows) one of each kind."""
    n = ruleset.suit_tokens_to_win
    return (
        tokens.matcha >= n
        or tokens.chawan >= n
        or tokens.water >= n
        or tokens.chashaku >= n
        or tokens.chasen >= ruleset.chasen_tokens_to_win
        or (
            ruleset.one_of_each_wins
            and tokens.matcha > 0
            and tokens.chawan > 0
            and tokens.water > 0
            and tokens.chashaku > 0
            and tokens.chasen > 0
        )
    )


def tokens_to_qualify(tokens: Tokens, ruleset: Ruleset) -> int:
    """How close to winning: the fewest more tokens that would make this seat qualify."""
    n = ruleset.suit_tokens_to_win
    options = [
        max(0, n - tokens.matcha),
        max(0, n - tokens.chawan),
        max(0, n - tokens.water),
        max(0, n - tokens.chashaku),
        max(0, ruleset.chasen_tokens_to_win - tokens.chasen),
    ]
    if ruleset.one_of_each_wins:
        counts = (tokens.matcha, tokens.chawan, tokens.water, tokens.chashaku, tokens.chasen)
        options.append(sum(1 for c in counts if c == 0))
    return min(options)


def compare(a: Tokens, b: Tokens) -> Seat | None:
    """More matcha wins, then chawan, water, chashaku; None when all four are equal."""
    left = (a.matcha, a.chawan, a.water, a.chashaku)
    right = (b.matcha, b.chawan, b.water, b.chashaku)
    if left == right:
        return None
    return 0 if left > right else 1


def check_win(tokens: tuple[Tokens, Tokens], ruleset: Ruleset) -> tuple[Seat | None, bool]:
    """After a reveal: (winner, decided_by_comparison); winner None means play goes on.

    One qualifying seat wins at once; when both qualify the comparison
    decides, and if it cannot, play goes on (RULES §6).
    """
    q0 = qualifies(tokens[0], ruleset)
    q1 = qualifies(tokens[1], ruleset)
    if q0 and q1:
        return compare(tokens[0], tokens[1]), True
    if q0:
        return 0, False
    if q1:
        return 1, False
    return None, False


def last_hand(hand: int, ruleset: Ruleset) -> bool:
    """The hand limit (RULES §6 decision, §9): after this hand the end comparison decides."""
    return hand >= ruleset.max_hands
