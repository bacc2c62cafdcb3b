"""A player's pairing card, as the FIDE Dutch system (C.04.3) reads it.

Seat 0 is White, seat 1 Black. Scores are in half points. Everything here is
derived from the player's record; nothing is stored.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final, Literal, TypeAlias

import msgspec

from schemas.cards import Seat

Float: TypeAlias = Literal["down", "up"] | None
Strength: TypeAlias = Literal[0, 1, 2, 3]
"""0 none, 1 mild, 2 strong, 3 absolute (C.04.3 1.7 / the 2017 text's A.6)."""

NONE: Final = 0
MILD: Final = 1
STRONG: Final = 2
ABSOLUTE: Final = 3


class Card(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    tpn: int
    """Pairing number: the place in the initial ranking (1 = the top seed)."""
    score: int
    """Half points for pairing (with any acceleration's virtual points)."""
    points: int = -1
    """Half points really scored (-1: the same as ``score``); orders the boards."""
    seats: tuple[Seat, ...] = ()
    """The seat of every game played over the board, in round order."""
    floats: tuple[Float, Float] = (None, None)
    """The float of the previous round and of the round before it."""
    opponents: frozenset[str] = frozenset()
    had_bye: bool = False
    """Had a pairing-allocated bye or scored a forfeit win (C.2: no second bye)."""
    topscorer: bool = False
    """Pairing the final round with more than half the maximum score (A.7)."""

    @property
    def real_points(self) -> int:
        return self.score if self.points < 0 else self.points

    @property
    def difference(self) -> int:
        """Colour difference: games as White less games as Black."""
        return self.seats.count(0) - self.seats.count(1)

    @property
    def double(self) -> bool:
        """The same seat in the two latest games played."""
        return len(self.seats) >= 2 and self.seats[-1] == self.seats[-2]

    @property
    def preference(self) -> tuple[Seat | None, int]:
        """The seat this player prefers and how strongly (C.04.3 A.6)."""
        return preference(self.seats)


@lru_cache(maxsize=65536)
def preference(seats: tuple[Seat, ...]) -> tuple[Seat | None, int]:
    """(preferred seat, strength) from the seats of the games played.

    Absolute: a colour difference beyond ±1, or the same seat in the two
    latest games; strong: a difference of ±1; mild: even, alternate from the
    last game; none: no game played yet. (Cached: a bracket asks it of every
    pair; many players share a history.)
    """
    if not seats:
        return None, NONE
    difference = seats.count(0) - seats.count(1)
    side: Seat = 1 if difference > 0 else 0 if difference < 0 else (1 if seats[-1] == 0 else 0)
    if abs(difference) > 1 or (len(seats) >= 2 and seats[-1] == seats[-2]):
        return side, ABSOLUTE
    if abs(difference) == 1:
        return side, STRONG
    return side, MILD


def rank_key(card: Card) -> tuple[int, int]:
    """Ranking for pairing purposes: score, then pairing number (A.2)."""
    return -card.score, card.tpn
