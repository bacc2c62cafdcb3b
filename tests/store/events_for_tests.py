"""Small, valid-looking match logs built straight from schemas.events (no engine)."""

from __future__ import annotations

from schemas.events import CardPlayed, Event, HandDealt, MatchCreated, Passed, TeaPair
from schemas.rules import STANDARD


def created(match_id: str) -> MatchCreated:
    return MatchCreated(
        match_id=match_id,
        players=("p-ann", "p-bo"),
        ruleset=STANDARD,
        first_dealer=0,
        seed_commitment="ab" * 32,
    )


def dealt(hand: int = 1) -> HandDealt:
    return HandDealt(
        hand=hand,
        dealer=0,
        tea=(
            TeaPair(number="M1", suit="C2"),
            TeaPair(number="W3", suit="S4"),
            TeaPair(number="M2", suit="Z1"),
        ),
        hands=(("M3", "C1", "W1", "S1", "Z2"), ("M4", "C3", "W2", "S2", "C4")),
        set_aside=("W4", "S3"),
    )


def played(seat: int = 0, card: str = "M3") -> CardPlayed:
    return CardPlayed(seat=seat, hand=1, round=1, card=card, target="number")  # type: ignore[arg-type]


def passed(seat: int = 1) -> Passed:
    return Passed(seat=seat, hand=1, round=1)  # type: ignore[arg-type]


def opening(match_id: str) -> list[Event]:
    """What a new match's first append looks like."""
    return [created(match_id), dealt()]
