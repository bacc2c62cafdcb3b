"""Tie-breaks, as FIDE's Tie-Break Regulations (Handbook C.07, 2023/2024) define them.

Every figure is read from the players' records (``service.tournaments.records``),
over finished games and complete rounds only:

* **Buchholz** (BH): the sum of the opponents' scores, one contribution per
  round. A round the player did not play over the board (a bye, a forfeit
  either way, an absence) contributes the player's own score, as if against
  a dummy opponent with that score (C.07 art. 16: "played against oneself").
  The opponents' scores are *adjusted*: each of their voluntarily unplayed
  rounds (a forfeit loss, a double forfeit, an absence) counts as a draw.
* **Buchholz Cut-1** (BH-C1): Buchholz less its least significant
  contribution; when the player has voluntarily unplayed rounds, one of
  those is cut first (the smallest of them), else the smallest of all.
* **Sonneborn-Berger** (SB): the sum over rounds of the player's game points
  times that round's contribution as in Buchholz (a win adds the opponent's
  adjusted score, a draw half of it, a loss nothing).
* **Direct encounter** (DE): among players still tied, the points they scored
  in the games between them. Applied only when all of them have met; if they
  have not, a player whose DE score no other tied player could reach even by
  winning their missing encounters is ranked first (and so on down). Players
  left equal stay tied at this step; the next tie-break decides.
* **Wins** (WIN): rounds in which the player got as many points as a win,
  played or not (a forfeit win, a full-point bye).
* **Games won** (GWIN): games won over the board.

In an arena there are no rounds: each game is one contribution, and the
"scores" above are arena points (with streaks), game points still 1 / ½ / 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Final, get_args

from schemas.tournaments import TiebreakName
from service.tournaments.records import RoundRecord

NAMES: Final[tuple[TiebreakName, ...]] = get_args(TiebreakName)

LABELS: Final[dict[TiebreakName, str]] = {
    "buchholz": "BH",
    "buchholz_cut1": "BH-C1",
    "sonneborn_berger": "SB",
    "direct_encounter": "DE",
    "wins": "WIN",
    "games_won": "GWIN",
}
"""The short names FIDE uses, for column headings."""


def finished(records: Sequence[RoundRecord]) -> list[RoundRecord]:
    """The records tie-breaks count: finished, counted games and complete rounds."""
    return [r for r in records if r.kind != "playing" and r.counted]


def adjusted_score(records: Sequence[RoundRecord]) -> float:
    """A player's score as an opponent sees it: voluntarily unplayed rounds count ½."""
    return sum(0.5 if r.voluntary else r.points for r in finished(records))


def contributions(
    records: Sequence[RoundRecord], own_score: float, opponent_scores: Mapping[str, float]
) -> list[tuple[float, RoundRecord]]:
    """Each round's Buchholz contribution, with the record it comes from."""
    out: list[tuple[float, RoundRecord]] = []
    for r in finished(records):
        if r.played and r.opponent is not None:
            out.append((opponent_scores[r.opponent], r))
        else:
            out.append((own_score, r))
    return out


def buchholz(
    records: Sequence[RoundRecord], own_score: float, opponent_scores: Mapping[str, float]
) -> float:
    return sum(value for value, _ in contributions(records, own_score, opponent_scores))


def buchholz_cut1(
    records: Sequence[RoundRecord], own_score: float, opponent_scores: Mapping[str, float]
) -> float:
    parts = contributions(records, own_score, opponent_scores)
    if not parts:
        return 0.0
    voluntary = [value for value, r in parts if r.voluntary]
    cut = min(voluntary) if voluntary else min(value for value, _ in parts)
    return sum(value for value, _ in parts) - cut


def sonneborn_berger(
    records: Sequence[RoundRecord], own_score: float, opponent_scores: Mapping[str, float]
) -> float:
    return sum(r.points * value for value, r in contributions(records, own_score, opponent_scores))


def wins(records: Sequence[RoundRecord], win_points: float = 1.0) -> float:
    return float(sum(1 for r in finished(records) if r.points >= win_points))


def games_won(records: Sequence[RoundRecord]) -> float:
    return float(sum(1 for r in finished(records) if r.kind == "win"))


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
