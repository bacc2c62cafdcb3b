"""Why a match ended as it did (RULES §6, §9), for telling it to people.

Pure: the final tokens and the ruleset in, the winning sets and the comparison
out, by the same thresholds and order as ``service.engine.winning`` (a property
test holds the two to one reading: tests/engine/test_outcome.py).
"""

from __future__ import annotations

from typing import Final

from schemas.cards import TOKEN_KINDS, Seat
from schemas.outcome import ComparisonStep, Decision, SuitKind, WinningSet
from schemas.rules import Ruleset
from schemas.views import Tokens

SUITS_IN_ORDER: Final[tuple[SuitKind, ...]] = ("matcha", "chawan", "water", "chashaku")
"""The order of the token comparison (RULES §6)."""


def winning_sets(tokens: Tokens, ruleset: Ruleset) -> list[WinningSet]:
    """Every way these tokens qualify under ``ruleset`` (empty: they do not)."""
    found = [
        WinningSet(way="suit", kind=kind, count=tokens[kind], needed=ruleset.suit_tokens_to_win)
        for kind in SUITS_IN_ORDER
        if tokens[kind] >= ruleset.suit_tokens_to_win
    ]
    if tokens.chasen >= ruleset.chasen_tokens_to_win:
        found.append(
            WinningSet(
                way="chasen", kind="chasen", count=tokens.chasen,
                needed=ruleset.chasen_tokens_to_win,
            )
        )  # fmt: skip
    if ruleset.one_of_each_wins and all(tokens[k] > 0 for k in TOKEN_KINDS):
        found.append(WinningSet(way="one_of_each", kind=None, count=5, needed=5))
    return found


def comparison_steps(a: Tokens, b: Tokens) -> list[ComparisonStep]:
    """The comparison line by line, up to the first suit where the seats differ."""
    steps: list[ComparisonStep] = []
    for kind in SUITS_IN_ORDER:
        steps.append(ComparisonStep(kind=kind, counts=(a[kind], b[kind])))
        if a[kind] != b[kind]:
            break
    return steps


def decision(reason: str | None, winner: Seat | None, annulled: bool) -> Decision:
    """The ``decided_by`` of a finished match, from its end reason."""
    if annulled:
        return "annulled"
    match reason:
        case "qualified":
            return "winning_set"
        case "comparison":
            return "comparison"
        case "hand_limit":
            return "hand_limit" if winner is not None else "draw"
        case "resigned" | "timeout" | "aborted":
            return reason
        case _:
            return "draw" if winner is None else "winning_set"


def explained_comparison(
    decided_by: Decision, tokens: tuple[Tokens, Tokens], winner: Seat | None
) -> list[ComparisonStep]:
    """The comparison steps worth telling: when the comparison decided, or found a draw."""
    if decided_by not in ("comparison", "hand_limit", "draw"):
        return []
    return comparison_steps(*tokens)
