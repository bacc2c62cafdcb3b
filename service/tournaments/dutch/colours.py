"""Seat allocation within a pair (C.04.3 E.1-E.5), seat 0 as White.

In order, the first rule that decides:

* E.1 both players get their preference (they prefer different seats);
* E.2 the stronger preference (absolute > strong > mild); two absolute
  preferences (topscorers): the wider colour difference;
* E.3 alternate from the most recent round in which one had seat 0 and the
  other seat 1 (C.04.2 D.5, games played only, read backwards);
* E.4 the higher-ranked player's preference;
* E.5 the higher-ranked player gets seat 0 if their pairing number is odd,
  seat 1 if even (the "initial colour" is seat 0).
"""

from __future__ import annotations

from schemas.cards import Seat
from service.tournaments.dutch.card import ABSOLUTE, Card


def seat_of_higher(higher: Card, lower: Card) -> Seat:
    """The seat the higher-ranked player of a pair gets."""
    ph, sh = higher.preference
    pl, sl = lower.preference
    if ph is not None and pl is not None and ph != pl:  # E.1
        return ph
    if ph is None and pl is not None:
        return 1 if pl == 0 else 0
    if pl is None and ph is not None:
        return ph
    if ph is not None and pl is not None:
        if sh != sl:  # E.2
            return ph if sh > sl else (1 if pl == 0 else 0)
        if sh == ABSOLUTE and abs(higher.difference) != abs(lower.difference):
            return ph if abs(higher.difference) > abs(lower.difference) else (1 if pl == 0 else 0)
        # E.3: back to the latest round in which they had different seats.
        for a, b in zip(reversed(higher.seats), reversed(lower.seats), strict=False):
            if a != b:
                return 1 if a == 0 else 0
        return ph  # E.4
    return 0 if higher.tpn % 2 == 1 else 1  # E.5


def seat_pair(a: Card, b: Card) -> tuple[str, str]:
    """Player ids by seat (seat 0 first) for the pair ``a``, ``b``."""
    higher, lower = (a, b) if (-a.score, a.tpn) < (-b.score, b.tpn) else (b, a)
    if seat_of_higher(higher, lower) == 0:
        return higher.player_id, lower.player_id
    return lower.player_id, higher.player_id
