"""How a finished match was decided, in the game's words (RULES §6, §9): data only.

Built by ``service.engine.outcome`` from the final tokens and the ruleset;
served by ``GET /api/matches/{id}/outcome``. Public facts only (tokens, result,
ratings): nothing in it was ever hidden from anyone.
"""

from typing import Literal, TypeAlias

import msgspec

from schemas.cards import Seat, TokenKind

SuitKind: TypeAlias = Literal["matcha", "chawan", "water", "chashaku"]

Decision: TypeAlias = Literal[
    "winning_set", "comparison", "hand_limit", "draw", "resigned", "timeout", "aborted", "annulled"
]
"""``winning_set``: one seat qualified; ``comparison``: both did, the token
comparison chose; ``hand_limit``: nobody qualified by the last hand, the
comparison chose; ``draw``: the comparison found all four suits equal."""


class WinningSet(msgspec.Struct, frozen=True, kw_only=True):
    """One way a seat's tokens qualify."""

    way: Literal["suit", "chasen", "one_of_each"]
    kind: TokenKind | None
    """The kind of the set (``suit``: its suit; ``chasen``: chasen; ``one_of_each``: None)."""
    count: int
    """How many of that kind the seat holds (``one_of_each``: 5 kinds)."""
    needed: int
    """How many the ruleset asks for."""


class ComparisonStep(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the token comparison: each seat's tokens of one suit."""

    kind: SuitKind
    counts: tuple[int, int]


class SeatOutcome(msgspec.Struct, frozen=True, kw_only=True):
    seat: Seat
    player: str
    name: str | None
    tokens: dict[TokenKind, int]
    winning_sets: list[WinningSet]
    rating_before: float | None = None
    rating_after: float | None = None
    """None: unrated (no ladder, annulled, aborted) or not yet applied by the workers."""


class MatchOutcome(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    ladder_id: str | None
    ruleset: str
    max_hands: int
    hands: int
    """Hands dealt."""
    winner: Seat | None
    reason: str | None
    decided_by: Decision
    comparison: list[ComparisonStep]
    """The comparison as far as it went (empty unless it decided, or drew)."""
    seats: tuple[SeatOutcome, SeatOutcome]
    rated: bool
    """The ladder rates this match (a finished, unannulled ladder match, not aborted)."""
    ratings_applied: bool
    """The workers have applied it: each seat's rating before and after is filled."""
