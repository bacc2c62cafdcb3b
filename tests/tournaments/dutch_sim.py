"""Random Swiss tournaments played on pairing cards alone: for the Dutch tests
(property tests of the absolute criteria, the cross-check against an
independent engine through TRF files)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from service.tournaments.dutch.card import Card
from service.tournaments.dutch.engine import DutchPairing, pair_round
from service.tournaments.trf import TrfPlayer, TrfRound, TrfTournament, write


@dataclass
class Sheet:
    """One player's history, round by round."""

    number: int
    score: int = 0
    rounds: list[tuple[int, str, str]] = field(default_factory=list)
    """(opponent number or 0, colour w/b/-, TRF result)."""
    scores_before: list[int] = field(default_factory=list)


Pairer = Callable[[list[Sheet], int, int], DutchPairing]


def cards(sheets: list[Sheet], round_no: int, total: int) -> list[Card]:
    by_number = {s.number: s for s in sheets}
    out = []
    for s in sheets:
        seats = tuple(0 if c == "w" else 1 for o, c, r in s.rounds if c in "wb" and r in "10=")
        floats = []
        for k, (o, _c, r) in enumerate(s.rounds):
            mine = s.scores_before[k]
            if o and r in "10=":
                theirs = by_number[o].scores_before[k]
                floats.append("down" if mine > theirs else "up" if mine < theirs else None)
            else:
                floats.append("down" if r in "U+F" else None)
        f1 = floats[-1] if floats else None
        f2 = floats[-2] if len(floats) > 1 else None
        out.append(
            Card(
                player_id=str(s.number),
                tpn=s.number,
                score=s.score,
                seats=seats,
                floats=(f1, f2),  # type: ignore[arg-type]
                opponents=frozenset(str(o) for o, c, r in s.rounds if o and r in "10="),
                had_bye=any(r in "U+" for _, _, r in s.rounds),
                topscorer=round_no == total and 2 * s.score > 2 * (round_no - 1),
            )
        )
    return out


def ours(sheets: list[Sheet], round_no: int, total: int) -> DutchPairing:
    return pair_round(
        cards(sheets, round_no, total), rounds_played=round_no - 1, final_round=round_no == total
    )


def play(pairing: DutchPairing, sheets: list[Sheet], rng: random.Random, draws: float) -> None:
    by = {str(s.number): s for s in sheets}
    for s in sheets:
        s.scores_before.append(s.score)
    for a, b in pairing.boards:
        x = rng.random()
        ra, rb = ("1", "0") if x < (1 - draws) / 2 else ("0", "1") if x < 1 - draws else ("=", "=")
        for p, o, c, r in ((a, b, "w", ra), (b, a, "b", rb)):
            by[p].rounds.append((int(o), c, r))
            by[p].score += {"1": 2, "=": 1, "0": 0}[r]
    if pairing.bye:
        by[pairing.bye].rounds.append((0, "-", "U"))
        by[pairing.bye].score += 2


def trf_of(sheets: list[Sheet], total: int) -> str:
    return write(
        TrfTournament(
            name="cross-check",
            rounds=total,
            players=tuple(
                TrfPlayer(
                    number=s.number,
                    name=f"Player {s.number}",
                    rating=2000 - s.number,
                    points=s.score / 2,
                    rounds=tuple(TrfRound(opponent=o, colour=c, result=r) for o, c, r in s.rounds),
                )
                for s in sheets
            ),
        )
    )


def tournament(
    n: int, total: int, seed: int, pairer: Pairer = ours, draws: float = 0.1
) -> list[tuple[list[Sheet], DutchPairing]]:
    """Play ``total`` rounds of ``n`` players; each round's sheets (before) and pairing."""
    rng = random.Random(seed)
    sheets = [Sheet(number=k) for k in range(1, n + 1)]
    out = []
    for r in range(1, total + 1):
        pairing = pairer(sheets, r, total)
        snapshot = [Sheet(s.number, s.score, list(s.rounds), list(s.scores_before)) for s in sheets]
        out.append((snapshot, pairing))
        play(pairing, sheets, rng, draws)
    return out
