"""Refunds to the opponents of a closed account (pure).

A closure decided when the match log ended at ``at_position`` voids the closed
account's matches. Each opponent who lost rating to it, net, in those matches
gets back the difference between two Elo recomputes of the ladder over the
results up to ``at_position``: with the voided matches and without them. The
second is exactly what the ratings projection recomputes once the annulments
are in the log (same results, same order, same arithmetic), so the rating
after the refund equals a recompute without the voided matches, bit for bit,
while nothing else was played. Elo ladders only: a Glicko-2 ladder is
recomputed (its ratings are exact) but no refund line is written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

import msgspec

from schemas.fairplay import AccountClosed
from service.fairplay.games import Game
from service.ratings.elo import EloRatings, EloSettings

REFUND_REASON = "refund: opponent closed for fair play"


class Refund(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    player_id: str
    closed_player: str
    amount: float
    before: float
    after: float
    at_position: int
    reason: str = REFUND_REASON


def _elo(games: Sequence[Game], elo: EloSettings) -> EloRatings:
    ratings = EloRatings(elo)
    for g in games:
        score0 = 0.5 if g.winner is None else (1.0 if g.winner == 0 else 0.0)
        ratings.rate(g.match_id, g.position, g.players[0], g.players[1], score0)
    return ratings


def refunds_of(
    ladder_id: str,
    games: Sequence[Game],
    closures: Sequence[AccountClosed],
    elo: EloSettings,
    *,
    closed: Collection[str] = frozenset(),
) -> list[Refund]:
    """The refunds on one ladder, closure by closure, players in id order; nobody in
    ``closed`` (closed accounts: an accomplice closed too gets nothing back)."""
    ordered = sorted(games, key=lambda g: g.position)
    found: list[Refund] = []
    for closure in closures:
        voided = set(closure.voided)
        counted = [g for g in ordered if g.counted_at(closure.at_position)]
        if not any(g.match_id in voided for g in counted):
            continue
        with_them = _elo(counted, elo)
        without = _elo([g for g in counted if g.match_id not in voided], elo)
        lost: dict[str, float] = defaultdict(float)
        for player, match_id, _pos, opponent, _s, _b, _a, change in with_them.history:
            if match_id in voided and opponent == closure.player_id:
                lost[player] += change
        for player in sorted(p for p, change in lost.items() if change < 0 and p not in closed):
            before, after = with_them.rating(player), without.rating(player)
            found.append(
                Refund(
                    ladder_id=ladder_id,
                    player_id=player,
                    closed_player=closure.player_id,
                    amount=after - before,
                    before=before,
                    after=after,
                    at_position=closure.at_position,
                )
            )
    return found
