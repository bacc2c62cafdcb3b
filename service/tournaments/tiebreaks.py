"""Tie-breaks by FIDE's Tie-Break Regulations (Handbook C.07, 2023 and later).

Every figure is read from the players' records (``service.tournaments.records``),
over finished games and complete rounds only. docs/tournaments.md quotes
FIDE's definition of each. Unplayed rounds follow C.07 art. 16:

* **An opponent's score** enters Buchholz and Sonneborn-Berger as it stands,
  forfeit losses, zero-point and half-point byes and absences included at the
  points they brought; only the rounds the opponent was not available for
  *after their last round* (a withdrawal) count as draws (½ each).
* **The player's own unplayed rounds** (byes of any kind, forfeits either
  way, absences) contribute the player's own score, as if against a
  "dummy" opponent of that score.
* **Cuts and medians** drop a voluntarily unplayed round's contribution
  first (a forfeit loss, a half- or zero-point bye, an absence), then the
  least significant values (and, for medians, the most significant too).

In an arena there are no rounds: each game is one contribution, and the
"scores" above are arena points (with streaks), game points still 1 / ½ / 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Final, get_args

from schemas.tournaments import TiebreakName
from service.tournaments.records import RoundRecord

NAMES: Final[tuple[TiebreakName, ...]] = get_args(TiebreakName)

LABELS: Final[dict[TiebreakName, str]] = {
    "buchholz": "BH",
    "buchholz_cut1": "BH-C1",
    "buchholz_cut2": "BH-C2",
    "buchholz_median1": "BH-M1",
    "buchholz_median2": "BH-M2",
    "sonneborn_berger": "SB",
    "progressive": "PS",
    "direct_encounter": "DE",
    "wins": "WIN",
    "games_won": "WON",
    "games_second_seat": "BPG",
    "average_rating_of_opponents": "ARO",
    "koya": "KS",
}
"""The short names FIDE uses (C.07 art. 5-10), for column headings."""

TRF_CODES: Final[dict[TiebreakName, str]] = {k: v.replace("-", "/") for k, v in LABELS.items()}
"""C.07's codes with their modifiers, as TRF-2026 record 202 lists them."""

PRESENT: Final = frozenset(
    {"win", "draw", "loss", "forfeit_win", "forfeit_loss", "double_forfeit", "bye", "half",
     "unpaired", "rest", "annulled"}
)  # fmt: skip
"""Kinds of record in which the player was available (paired, or a bye asked for)."""


def finished(records: Sequence[RoundRecord]) -> list[RoundRecord]:
    """The records tie-breaks count: finished, counted games and complete rounds."""
    return [r for r in records if r.kind != "playing" and r.counted]


def score(records: Sequence[RoundRecord]) -> float:
    return sum(r.points for r in finished(records))


def adjusted_score(records: Sequence[RoundRecord]) -> float:
    """A player's score as it enters an opponent's Buchholz (C.07 art. 16):
    the points scored, and ½ for each round after their last one (a withdrawal)."""
    rows = finished(records)
    last = max((k for k, r in enumerate(rows) if r.kind in PRESENT), default=-1)
    return sum(r.points for r in rows) + 0.5 * sum(
        1 for r in rows[last + 1 :] if r.kind == "absent"
    )


@dataclass(frozen=True, kw_only=True)
class Context:
    """What every player's tie-breaks read: everyone's scores and ratings."""

    scores: Mapping[str, float]
    """Each player's score (arena points in an arena)."""
    opponent_scores: Mapping[str, float]
    """Each player's score as an opponent's tie-break sees it (art. 16)."""
    ratings: Mapping[str, float]
    max_score: float
    """The most a player could have scored (Koya's 50 %)."""
    round_robin: bool = False
    """C.07 art. 15.2: in a round-robin a forfeit is a regular game (no dummy)."""


def contributions(
    records: Sequence[RoundRecord], own: float, ctx: Context
) -> list[tuple[float, RoundRecord]]:
    """Each round's Buchholz contribution, with the record it comes from."""
    out: list[tuple[float, RoundRecord]] = []
    for r in finished(records):
        regular = r.played or (
            ctx.round_robin and r.kind in ("forfeit_win", "forfeit_loss", "double_forfeit")
        )
        if regular and r.opponent is not None:
            out.append((ctx.opponent_scores[r.opponent], r))
        else:
            out.append((own, r))
    return out


def _cut(parts: list[tuple[float, RoundRecord]], low: int, high: int) -> float:
    """The sum less the ``low`` least significant values (voluntarily unplayed
    rounds first) and the ``high`` most significant ones."""
    ordered = sorted(parts, key=lambda p: (not p[1].voluntary, p[0]))
    kept = ordered[low:]
    if high:
        kept = sorted(kept, key=lambda p: p[0])[: max(0, len(kept) - high)]
    return sum(v for v, _ in kept)


def buchholz(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return sum(v for v, _ in contributions(records, own, ctx))


def buchholz_cut1(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return _cut(contributions(records, own, ctx), 1, 0)


def buchholz_cut2(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return _cut(contributions(records, own, ctx), 2, 0)


def buchholz_median1(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return _cut(contributions(records, own, ctx), 1, 1)


def buchholz_median2(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return _cut(contributions(records, own, ctx), 2, 2)


def sonneborn_berger(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return sum(r.points * v for v, r in contributions(records, own, ctx))


def progressive(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    total = running = 0.0
    for r in finished(records):
        running += r.points
        total += running
    return total


def wins(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return float(sum(1 for r in finished(records) if r.points >= 1.0))


def games_won(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return float(sum(1 for r in finished(records) if r.kind == "win"))


def games_second_seat(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    return float(sum(1 for r in finished(records) if r.played and r.seat == 1))


def average_rating_of_opponents(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    rated = [ctx.ratings[r.opponent] for r in finished(records) if r.played and r.opponent]
    if not rated:
        return 0.0
    return float(int(sum(rated) / len(rated) + 0.5))


def koya(records: Sequence[RoundRecord], own: float, ctx: Context) -> float:
    half = ctx.max_score / 2
    return sum(
        r.points
        for r in finished(records)
        if r.opponent is not None and r.kind != "annulled" and ctx.scores[r.opponent] >= half
    )


SCALARS: Final[dict[TiebreakName, Callable[[Sequence[RoundRecord], float, Context], float]]] = {
    "buchholz": buchholz,
    "buchholz_cut1": buchholz_cut1,
    "buchholz_cut2": buchholz_cut2,
    "buchholz_median1": buchholz_median1,
    "buchholz_median2": buchholz_median2,
    "sonneborn_berger": sonneborn_berger,
    "progressive": progressive,
    "wins": wins,
    "games_won": games_won,
    "games_second_seat": games_second_seat,
    "average_rating_of_opponents": average_rating_of_opponents,
    "koya": koya,
}
"""Every tie-break but direct encounter, which depends on the tied group itself."""


def encounter_points(
    group: Sequence[str], records: Mapping[str, Sequence[RoundRecord]]
) -> tuple[dict[str, float], set[frozenset[str]]]:
    """Points each player of ``group`` scored against the others, and which pairs met."""
    members = set(group)
    scored = dict.fromkeys(group, 0.0)
    met: set[frozenset[str]] = set()
    for player in group:
        for r in finished(records.get(player, ())):
            if r.opponent in members and r.kind not in ("annulled", "bye"):
                scored[player] += r.points
                met.add(frozenset((player, r.opponent)))
    return scored, met


def direct_encounter(
    group: Sequence[str], records: Mapping[str, Sequence[RoundRecord]]
) -> tuple[list[list[str]], dict[str, float]]:
    """The tied ``group`` split into ranked subgroups, and each player's DE score
    (points against the rest of ``group``)."""
    scored, met = encounter_points(group, records)
    if len(group) < 2:
        return [list(group)], scored
    if all(frozenset(p) in met for p in combinations(group, 2)):
        levels = sorted({scored[p] for p in group}, reverse=True)
        return [[p for p in group if scored[p] == level] for level in levels], scored
    # Not all met: rank first whoever nobody else could catch by winning
    # every encounter they still miss; then the same among the others.
    missing = {p: sum(1 for q in group if q != p and frozenset((p, q)) not in met) for p in group}
    top = max(scored[p] for p in group)
    leaders = [p for p in group if scored[p] == top]
    if len(leaders) == 1:
        best = leaders[0]
        if all(top > scored[q] + missing[q] for q in group if q != best):
            rest, _ = direct_encounter([p for p in group if p != best], records)
            return [[best], *rest], scored
    return [list(group)], scored
