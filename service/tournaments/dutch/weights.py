"""The edge weights of a bracket: FIDE's criteria, one bit field each, in FIDE's order.

A bracket's graph (``bracket.py``) has a vertex for every moved-down player
(MDP), every resident and every player of the next scoregroup ("lower"
players, there for C.7). An edge is a pairing the absolute criteria allow
(C.1 no rematch, organiser-forbidden pairs, C.3 non-topscorers with the same
absolute preference never meet); its weight is the concatenation of one
field per quality criterion, most significant first:

* bye (last or collapsed bracket only), C.2 with the PAB: 1 + each player's
  "had a bye", so the player left over is one who may have it;
* C.5 maximise the pairs: 1 for a pair of bracket players;
* C.6 minimise the PSD: a unit for each downfloat the pair avoids, less a
  unit of the pair's own score difference, each difference in its own
  sub-field (larger differences more significant);
* C.7 (not in the last or collapsed bracket) the next bracket: 1 for a pair
  with a lower player, then its PSD as in C.6;
* C.8 / C.9 (final round) topscorers' colour difference beyond ±2 / third
  seat in a row: minus the players of the pair who would get it;
* C.10 colour preferences not granted: -1 when both prefer the same seat;
* C.11 strong preferences not granted: -1 when, besides, the weaker is strong;
* C.12 / C.14 the same downfloat as one / two rounds before: the pair's
  players with that float who do not downfloat now (an unpaired one does);
* C.13 / C.15 the same upfloat again: -1 when the lower player upfloats again;
* C.16-C.19 the score differences of those repeated floats, likewise.

Fields counting what a criterion avoids are positive; fields counting what it
suffers are negative (a pair that gives a player an unwanted float scores -1
there), so a field is only as wide as the most its players could add up to,
and the criteria that concern few players take few bits. Every field is wide
enough to hold its values summed over a whole matching (with a sign bit),
so comparing two matchings' total weights compares the criteria one by one,
in order: exactly the lexicographic order in which C.04.3 ranks candidates.
A field no edge of the bracket can make non-zero takes no bits at all. The
lowest bits are left free for the order of generation (D.1-D.3), which the
bracket fills in step by step (``bracket.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum

from service.tournaments.dutch.card import ABSOLUTE, STRONG, Card
from service.tournaments.dutch.colours import seat_of_higher


class Role(IntEnum):
    LOWER = 0
    RESIDENT = 1
    MDP = 2


class Scope:
    """What the weights of one bracket need to know."""

    def __init__(
        self,
        roles: dict[str, Role],
        cards: Sequence[Card],
        *,
        lowest_score: int,
        collapsed: bool,
        last: bool,
        rounds_played: int,
        final_round: bool,
    ) -> None:
        self.roles = roles
        self.lowest_score = lowest_score
        self.collapsed = collapsed
        self.last = last
        self.rounds_played = rounds_played
        self.final_round = final_round
        # C.6's score differences: a downfloater's SD is its score less one
        # point below the bracket's lowest resident (A.8); a pair's, its own.
        diffs: set[int] = set()
        bracket = [c for c in cards if roles[c.player_id] != Role.LOWER]
        for c in bracket:
            diffs.add(self.float_sd(c))
        for i, a in enumerate(bracket):
            for b in bracket[i + 1 :]:
                diffs.add(abs(a.score - b.score))
        self.diff_order = sorted(diffs)
        # Each difference's sub-field holds its count over a whole matching:
        # the players whose downfloat would have it, and for each player the
        # pairs with a lower player that would have it.
        counts: dict[int, int] = dict.fromkeys(diffs, 0)
        for c in bracket:
            counts[self.float_sd(c)] += 1
        for i, a in enumerate(bracket):
            for d in {abs(a.score - b.score) for b in bracket[i + 1 :]}:
                counts[d] += 1
        self.diff_bits: dict[int, int] = {}
        offset = 0
        for d in self.diff_order:
            self.diff_bits[d] = offset
            offset += counts[d].bit_length() + 1
        self.psd_bits = offset + 1

    def active(self, name: str, cards: Sequence[Card]) -> bool:
        """Whether the field can be non-zero for any edge of this bracket (a
        field that cannot takes no bits, and is not computed edge by edge)."""
        inside = [c for c in cards if self.roles[c.player_id] != Role.LOWER]
        floats = {(k, c.floats[k]) for c in inside for k in (0, 1)}
        match name:
            case "bye":
                return self.collapsed or self.last
            case "C.7":
                return not (self.collapsed or self.last) and len(inside) < len(cards)
            case "C.8" | "C.9":
                return self.final_round and any(c.topscorer for c in inside)
            case "C.10" | "C.11":
                return any(c.seats for c in inside)
            case "C.12" | "C.16":
                return (0, "down") in floats
            case "C.13" | "C.17":
                return (0, "up") in floats
            case "C.14" | "C.18":
                return (1, "down") in floats
            case "C.15" | "C.19":
                return (1, "up") in floats
        return True

    def float_sd(self, card: Card) -> int:
        return card.score - (self.lowest_score - 2)

    def psd_unit(self, difference: int) -> int:
        return 1 << self.diff_bits.get(difference, 0)


def _conflict(a: Card, b: Card) -> bool:
    pa, _ = a.preference
    pb, _ = b.preference
    return pa is not None and pa == pb


def allowed(a: Card, b: Card, forbidden: set[frozenset[str]]) -> bool:
    """The absolute criteria C.1 and C.3 (and the organiser's forbidden pairs)."""
    if b.player_id in a.opponents:
        return False
    if forbidden and frozenset((a.player_id, b.player_id)) in forbidden:
        return False
    if a.topscorer or b.topscorer:
        return True
    pa, sa = a.preference
    pb, sb = b.preference
    return not (sa == ABSOLUTE and sb == ABSOLUTE and pa == pb)


def _higher_lower(a: Card, b: Card) -> tuple[Card, Card]:
    return (a, b) if (-a.score, a.tpn) <= (-b.score, b.tpn) else (b, a)


def _colour_outcome(a: Card, b: Card) -> tuple[list[int], list[bool]]:
    """Each player's colour difference after this pairing, and whether it is a third same seat."""
    higher, lower = _higher_lower(a, b)
    seat = seat_of_higher(higher, lower)
    out_d = []
    out_t = []
    for card, s in ((higher, seat), (lower, 1 - seat)):
        d = card.difference + (1 if s == 0 else -1)
        out_d.append(d)
        out_t.append(len(card.seats) >= 2 and card.seats[-1] == card.seats[-2] == s)
    return out_d, out_t


Field = Callable[[Card, Card, Scope], int]
"""An edge's value in one field (higher is better)."""


def _is(role: Role) -> Callable[[Card, Scope], bool]:
    return lambda c, s: s.roles[c.player_id] == role


_lower = _is(Role.LOWER)


def _both_in(a: Card, b: Card, s: Scope) -> bool:
    return not _lower(a, s) and not _lower(b, s)


def _bye(a: Card, b: Card, s: Scope) -> int:
    if not (s.collapsed or s.last):
        return 0
    return 1 + int(a.had_bye) + int(b.had_bye)


def _c5(a: Card, b: Card, s: Scope) -> int:
    return int(_both_in(a, b, s))


def _c6(a: Card, b: Card, s: Scope) -> int:
    if not _both_in(a, b, s):
        return 0
    return (
        s.psd_unit(s.float_sd(a)) + s.psd_unit(s.float_sd(b)) - s.psd_unit(abs(a.score - b.score))
    )


def _c7(a: Card, b: Card, s: Scope) -> int:
    if s.collapsed or s.last:
        return 0
    lower_pair = int(_lower(a, s) or _lower(b, s))
    value = lower_pair << s.psd_bits
    for c in (a, b):
        if not _lower(c, s):
            value += s.psd_unit(s.float_sd(c))
    return value


def _topscorer_rule(check: Callable[[list[int], list[bool]], list[bool]]) -> Field:
    def value(a: Card, b: Card, s: Scope) -> int:
        if not s.final_round or not _both_in(a, b, s) or not (a.topscorer or b.topscorer):
            return 0
        return -sum(check(*_colour_outcome(a, b)))

    return value


_c8 = _topscorer_rule(lambda d, t: [abs(x) > 2 for x in d])
_c9 = _topscorer_rule(lambda d, t: t)


def _c10(a: Card, b: Card, s: Scope) -> int:
    return -int(_both_in(a, b, s) and _conflict(a, b))


def _c11(a: Card, b: Card, s: Scope) -> int:
    if not _both_in(a, b, s) or not _conflict(a, b):
        return 0
    return -int(min(a.preference[1], b.preference[1]) >= STRONG)


def _down(k: int, by_score: bool) -> Field:
    def value(a: Card, b: Card, s: Scope) -> int:
        if s.rounds_played <= k or not _both_in(a, b, s):
            return 0
        higher, lower = _higher_lower(a, b)
        total = 0
        # An unpaired player downfloats; in a pair only the higher may.
        for card in (higher, lower):
            if card.floats[k] == "down":
                total += s.float_sd(card) if by_score else 1
        if higher.floats[k] == "down" and higher.score > lower.score:
            total -= higher.score - lower.score if by_score else 1
        return total

    return value


def _up(k: int, by_score: bool) -> Field:
    def value(a: Card, b: Card, s: Scope) -> int:
        if s.rounds_played <= k or not _both_in(a, b, s):
            return 0
        higher, lower = _higher_lower(a, b)
        if lower.floats[k] == "up" and higher.score > lower.score:
            return -(higher.score - lower.score if by_score else 1)
        return 0

    return value


CRITERIA: tuple[tuple[str, Field], ...] = (
    ("bye", _bye),
    ("C.5", _c5),
    ("C.6", _c6),
    ("C.7", _c7),
    ("C.8", _c8),
    ("C.9", _c9),
    ("C.10", _c10),
    ("C.11", _c11),
    ("C.12", _down(0, False)),
    ("C.13", _up(0, False)),
    ("C.14", _down(1, False)),
    ("C.15", _up(1, False)),
    ("C.16", _down(0, True)),
    ("C.17", _up(0, True)),
    ("C.18", _down(1, True)),
    ("C.19", _up(1, True)),
)
"""The quality criteria in FIDE's order (most significant first)."""
