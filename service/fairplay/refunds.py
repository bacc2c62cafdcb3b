"""Refunds to the opponents of a closed account (pure).

A closure decided when the match log ended at ``at_position`` voids the closed
account's matches. Each opponent who lost rating to it, net, in those matches
gets back the difference between two Elo recomputes of the ladder over the
results up to ``at_position``: with the voided matches and without them. The
second is exactly what the ratings projection recomputes once the annulments
are in the log (same results, same order, same arithmetic), so the rating
after the refund equals a recompute without the voided matches, bit for bit,
while nothing else was played. A Glicko-2 ladder the same way, with its own
rating periods (each result's period cut from its end's time as the ratings'
read cuts it); there an opponent "lost rating" to the closed account when they
lost more than they won of the voided matches against it (a period's rating
moves with all its games at once, so no single game's change can be told).
A season's soft reset is not replayed here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

import msgspec

from schemas.fairplay import AccountClosed
from service.fairplay.games import Game
from service.ratings.elo import EloRatings, EloSettings
from service.ratings.glicko2 import Glicko2Ratings, Glicko2Settings

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


def _score0(g: Game) -> float:
    return 0.5 if g.winner is None else (1.0 if g.winner == 0 else 0.0)


def _elo(games: Sequence[Game], elo: EloSettings) -> EloRatings:
    ratings = EloRatings(elo)
    for g in games:
        ratings.rate(g.match_id, g.position, g.players[0], g.players[1], _score0(g))
    return ratings


def _glicko2(games: Sequence[Game], settings: Glicko2Settings) -> dict[str, float]:
    """Each player's Glicko-2 rating after ``games`` (periods from the store's
    times: ``round(seconds * 10**6) // period_us``, PostgreSQL's ``::bigint`` of
    the same float product)."""
    ratings = Glicko2Ratings(settings)
    period_us = settings.period_us
    for g in games:
        period = round(g.ended_s * 1_000_000.0) // period_us
        ratings.rate(g.match_id, g.position, g.players[0], g.players[1], _score0(g), period)
    return {p.player_id: p.rating for p in ratings.players.values()}


def _elo_losers(
    counted: Sequence[Game], closure: AccountClosed, elo: EloSettings
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    voided = set(closure.voided)
    with_them = _elo(counted, elo)
    without = _elo([g for g in counted if g.match_id not in voided], elo)
    lost: dict[str, float] = defaultdict(float)
    for player, match_id, _pos, opponent, _s, _b, _a, change in with_them.history:
        if match_id in voided and opponent == closure.player_id:
            lost[player] += change
    before = {p: with_them.rating(p) for p in lost}
    after = {p: without.rating(p) for p in lost}
    return before, after, [p for p, change in lost.items() if change < 0]


def _glicko2_losers(
    counted: Sequence[Game], closure: AccountClosed, settings: Glicko2Settings
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    voided = set(closure.voided)
    net: dict[str, float] = defaultdict(float)
    for g in counted:
        if g.match_id in voided and closure.player_id in g.players:
            seat = 1 - g.players.index(closure.player_id)
            net[g.players[seat]] += (_score0(g) if seat == 0 else 1.0 - _score0(g)) - 0.5
    with_them = _glicko2(counted, settings)
    without = _glicko2([g for g in counted if g.match_id not in voided], settings)
    after = {p: without.get(p, settings.initial) for p in net}
    return with_them, after, [p for p, score in net.items() if score < 0]


def refunds_of(
    ladder_id: str,
    games: Sequence[Game],
    closures: Sequence[AccountClosed],
    rating: EloSettings | Glicko2Settings,
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
        if isinstance(rating, EloSettings):
            before, after, losers = _elo_losers(counted, closure, rating)
        else:
            before, after, losers = _glicko2_losers(counted, closure, rating)
        for player in sorted(p for p in losers if p not in closed):
            found.append(
                Refund(
                    ladder_id=ladder_id,
                    player_id=player,
                    closed_player=closure.player_id,
                    amount=after[player] - before[player],
                    before=before[player],
                    after=after[player],
                    at_position=closure.at_position,
                )
            )
    return found
