"""Cards, targets, seats and token kinds, by their public codes."""

from typing import Final, Literal, TypeAlias

Card: TypeAlias = Literal[
    "M1", "M2", "M3", "M4",
    "C1", "C2", "C3", "C4",
    "W1", "W2", "W3", "W4",
    "S1", "S2", "S3", "S4",
    "Z1", "Z2",
]  # fmt: skip
"""A ceremony card: suit code + rank, or one of the two zero cards."""

Suit: TypeAlias = Literal["matcha", "chawan", "water", "chashaku"]
TokenKind: TypeAlias = Literal["matcha", "chawan", "water", "chashaku", "chasen"]
Target: TypeAlias = Literal["number", "suit"]
Seat: TypeAlias = Literal[0, 1]
RoundNo: TypeAlias = Literal[1, 2, 3]

ALL_CARDS: Final[tuple[Card, ...]] = (
    "M1", "M2", "M3", "M4",
    "C1", "C2", "C3", "C4",
    "W1", "W2", "W3", "W4",
    "S1", "S2", "S3", "S4",
    "Z1", "Z2",
)  # fmt: skip
"""Every card once, in canonical order (the order dealing starts from)."""

SUITS: Final[tuple[Suit, ...]] = ("matcha", "chawan", "water", "chashaku")
TOKEN_KINDS: Final[tuple[TokenKind, ...]] = ("matcha", "chawan", "water", "chashaku", "chasen")
TARGETS: Final[tuple[Target, ...]] = ("number", "suit")
SEATS: Final[tuple[Seat, ...]] = (0, 1)
