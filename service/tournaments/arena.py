"""Arena: points with a streak bonus, and the pairing of whoever is waiting.

Points (lichess): a win 2, a draw 1, a loss 0. After two wins in a row a
player is *on a streak*: every game is worth double (a win 4, a draw 2)
until one is not won. A forfeit win counts as a win, any forfeit loss as a
loss.

Pairing: as soon as players are free (the start, a finished game, a late
entry, a return), the waiting players are paired among themselves by one
maximum matching (``networkx.max_weight_matching``, as many pairs as the
rules allow): never the opponent one just played (no immediate rematch),
never a pair the organiser forbade, never two who have met when the
organiser asked to avoid repeats; among those, the closest on the live
leaderboard (the waiting players in leaderboard order, ``C² - min(gap, C)²``
per pair for ``gap`` places apart). A player whose only
possible opponents are barred waits for the next one to finish.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Final

import msgspec
import networkx as nx

from schemas.cards import Seat
from service.tournaments.dutch.card import Card
from service.tournaments.dutch.colours import seat_pair
from service.tournaments.records import RoundRecord

DENSE_LIMIT: Final = 64
"""Waiting pools up to this size get a complete graph; larger ones (the start
of a big arena) join each player to its ``WINDOW`` neighbours first."""
WINDOW: Final = 8
GAP_CAP: Final = 50


def points(records: Iterable[RoundRecord]) -> tuple[int, bool]:
    """A player's arena points over their counted, finished games, and whether
    they are on a streak now."""
    total = 0
    wins_in_a_row = 0
    for record in records:
        if not record.counted or record.kind in ("playing", "annulled"):
            continue
        on_streak = wins_in_a_row >= 2
        if record.kind in ("win", "forfeit_win"):
            total += 4 if on_streak else 2
            wins_in_a_row += 1
        else:
            if record.kind == "draw":
                total += 2 if on_streak else 1
            wins_in_a_row = 0
    return total, wins_in_a_row >= 2


class ArenaPlayer(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    opponents: frozenset[str]
    seats: tuple[Seat, ...]
    """The seats of the games played: seats are given by the Dutch rules (E.1-E.5)."""
    last_opponent: str | None


def pair_pool(
    waiting: Sequence[ArenaPlayer],
    *,
    forbidden: Collection[tuple[str, str]] = (),
    avoid_repeats: bool = False,
) -> list[tuple[str, str]]:
    """Pairs (seat 0 first) among ``waiting``, given best-ranked first."""
    barred = {frozenset(pair) for pair in forbidden}
    n = len(waiting)

    def allowed(a: ArenaPlayer, b: ArenaPlayer) -> bool:
        ida, idb = a.player_id, b.player_id
        if a.last_opponent == idb or b.last_opponent == ida:
            return False
        if avoid_repeats and idb in a.opponents:
            return False
        return frozenset((ida, idb)) not in barred

    def graph(window: int | None) -> nx.Graph[int]:
        g: nx.Graph[int] = nx.Graph()
        for i in range(n):
            top = n if window is None else min(n, i + window + 1)
            for j in range(i + 1, top):
                if allowed(waiting[i], waiting[j]):
                    gap = min(j - i, GAP_CAP)
                    g.add_edge(i, j, weight=GAP_CAP**2 - gap * gap + 1)
        return g

    window: int | None = None if n <= DENSE_LIMIT else WINDOW
    while True:
        matching = nx.max_weight_matching(graph(window), maxcardinality=True)
        if window is None or len(matching) == n // 2:
            break
        window = window * 4 if window * 4 < n else None
    pairs = sorted(tuple(sorted((int(u), int(v)))) for u, v in matching)
    cards = [
        Card(player_id=p.player_id, tpn=k + 1, score=0, seats=p.seats)
        for k, p in enumerate(waiting)
    ]
    return [seat_pair(cards[i], cards[j]) for i, j in pairs]
