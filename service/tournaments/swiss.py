"""Swiss pairing as one weighted maximum matching (``networkx.max_weight_matching``).

Every player is a vertex; with an odd number of players one more vertex, the
*bye*, stands for "no opponent this round". An edge is a pairing the rules
allow; its weight says how good it is. The matching has as many edges as the
graph allows (``maxcardinality=True``) and, among those, the largest total
weight. Each rule is one *level* of the weight, and a level's unit is larger
than everything all lower levels can add up to over a whole matching, so the
levels compare lexicographically (highest first):

1. **Hard rules are missing edges**: no edge between a pair the organiser
   forbade, and no bye edge to a player who already had a bye or a forfeit
   win (FIDE C.04.1: one bye at most), unless nobody is left without one.
2. **No rematch while another pairing exists**: 1 for an edge between players
   who have not met over the board, 0 for a rematch. Maximising this first
   means a rematch is chosen only if every pairing of everybody needs one.
3. **The bye goes to the lowest score**: a bye edge is worth
   ``max_score - score`` (half points), other edges 0.
4. **Score groups**: ``S² - d²`` for a score difference of ``d`` half points
   (``S`` the largest difference possible). Maximising it minimises the sum of
   squared differences: nobody floats out of their score group unless the
   rules above force it, and then as few and as short a way as possible.
5. **Seats balance**: each player wants a seat (the one they had less often,
   else the other than last time) with a strength: 3 absolute (two seats
   ahead, or the same seat twice running), 2 strong (one ahead), 1 mild
   (even, alternate). An edge is worth 3 when both can get their wish, else
   ``3 - the weaker wish's strength``.
6. **Rating order within the group** (FIDE Dutch: the top half meets the
   bottom half, 1st v (n/2+1)th): ``C² - min(dev, C)²`` where ``dev`` is how
   far the pair is from that ideal: for two players of one group at places
   ``i < j`` of ``m``, ``|j - i - m//2|``; for a floater, its distance from the
   bottom of its group plus its opponent's distance from the top of theirs;
   for the bye, the player's distance from the bottom of the whole ranking
   (the lowest-ranked player without a bye gets it).

Fields above 2·``DENSE_LIMIT`` players use a sparse graph: each player is
joined to the players near their ideal partner in their own group, to their
neighbours in the ranking (the floaters across a group boundary), and the
bye to the lowest-ranked players. If that graph cannot pair everyone
without a rematch, it is widened, up to the complete graph: rules 1 and 2
are never given up to speed. docs/tournaments.md repeats this with examples.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

import msgspec
import networkx as nx

from schemas.cards import Seat

DENSE_LIMIT: Final = 120
"""Up to this many players every pair is an edge (a complete graph)."""
WINDOW: Final = 6
"""The sparse graph's first width: partners tried on each side of the ideal one."""
RATING_CAP: Final = 40
"""Deviations from the Dutch ideal beyond this count the same (keeps weights small)."""

BYE: Final = "\x00bye"
"""The bye vertex (no player id is empty-prefixed)."""


class SwissPlayer(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    score: int
    """Half points so far."""
    opponents: frozenset[str]
    """Everyone met over the board."""
    seats: tuple[Seat, ...]
    """The seat of each game played over the board, in order."""
    can_have_bye: bool


class SwissPairing(msgspec.Struct, frozen=True, kw_only=True):
    boards: tuple[tuple[str, str], ...]
    """Seat 0 first, in board order (higher scores first)."""
    bye: str | None
    unpaired: tuple[str, ...]
    """Players no legal pairing could place (only possible with forbidden pairs)."""


def seat_wish(seats: Sequence[Seat]) -> tuple[Seat | None, int]:
    """The seat a player would like next and how strongly (0: no wish)."""
    if not seats:
        return None, 0
    diff = seats.count(0) - seats.count(1)
    wanted: Seat = 0 if diff < 0 else 1 if diff > 0 else (1 if seats[-1] == 0 else 0)
    if abs(diff) >= 2 or (len(seats) >= 2 and seats[-1] == seats[-2]):
        return wanted, 3
    return wanted, 2 if diff else 1


def _seat_value(a: SwissPlayer, b: SwissPlayer) -> int:
    wa, sa = seat_wish(a.seats)
    wb, sb = seat_wish(b.seats)
    if wa is None or wb is None or wa != wb:
        return 3
    return 3 - min(sa, sb)


def seats_for(higher: SwissPlayer, lower: SwissPlayer, board: int) -> tuple[str, str]:
    """Seat 0 and seat 1 for a pair (``higher`` is the higher ranked).

    Both get their wish if they can; else the stronger wish wins, and the
    higher-ranked player's on a tie (FIDE Dutch). With no wish at all (the
    first round), the higher-ranked player takes seat 0 on odd boards and
    seat 1 on even ones.
    """
    wh, sh = seat_wish(higher.seats)
    wl, sl = seat_wish(lower.seats)
    if wh is None and wl is None:
        first_is_higher = board % 2 == 1
    elif wh is None:
        first_is_higher = wl == 1
    elif wl is None or wh != wl or sh >= sl:
        first_is_higher = wh == 0
    else:
        first_is_higher = wl == 1
    if first_is_higher:
        return higher.player_id, lower.player_id
    return lower.player_id, higher.player_id


class _Graph:
    """The weighted graph of one round, built for a ranking of players."""

    def __init__(self, ranked: Sequence[SwissPlayer], forbidden: Collection[tuple[str, str]]):
        self.ranked = ranked
        self.forbidden = {frozenset(pair) for pair in forbidden}
        self.index = {p.player_id: i for i, p in enumerate(ranked)}
        n = len(ranked)
        self.with_bye = n % 2 == 1
        # Score groups: place within the group and the group's size.
        self.place: list[int] = []
        self.size: list[int] = []
        start = 0
        while start < n:
            end = start
            while end < n and ranked[end].score == ranked[start].score:
                end += 1
            self.place += range(end - start)
            self.size += [end - start] * (end - start)
            start = end
        byes_left = [p for p in ranked if p.can_have_bye]
        self.bye_ok = {p.player_id for p in (byes_left or ranked)}
        top = max((p.score for p in ranked), default=0)
        low = min((p.score for p in ranked), default=0)
        self.max_score = top
        self.span = top - low
        edges = n // 2 + 1
        # Level units, lowest first: each exceeds all that the lower levels
        # can add up to over a whole matching.
        self.u_seat = edges * RATING_CAP**2 + 1
        self.u_score = self.u_seat * (edges * 3 + 1)
        self.u_bye = self.u_score * (edges * self.span**2 + 1)
        self.u_rematch = self.u_bye * (self.max_score + 1)

    def weight(self, i: int, j: int) -> int | None:
        """The weight of the edge between ranks ``i < j`` (None: not allowed)."""
        a, b = self.ranked[i], self.ranked[j]
        if frozenset((a.player_id, b.player_id)) in self.forbidden:
            return None
        fresh = 0 if b.player_id in a.opponents else 1
        d = a.score - b.score
        if a.score == b.score:
            dev = abs(self.place[j] - self.place[i] - self.size[i] // 2)
        else:
            dev = (self.size[i] - 1 - self.place[i]) + self.place[j]
        dev = min(dev, RATING_CAP)
        return (
            fresh * self.u_rematch
            + (self.span**2 - d * d) * self.u_score
            + _seat_value(a, b) * self.u_seat
            + RATING_CAP**2
            - dev * dev
        )

    def bye_weight(self, i: int) -> int | None:
        player = self.ranked[i]
        if player.player_id not in self.bye_ok:
            return None
        dev = min(len(self.ranked) - 1 - i, RATING_CAP)
        return (
            self.u_rematch
            + (self.max_score - player.score) * self.u_bye
            + self.span**2 * self.u_score
            + 3 * self.u_seat
            + RATING_CAP**2
            - dev * dev
        )

    def build(self, window: int | None) -> nx.Graph[int | str]:
        """The graph: complete (``window`` None) or sparse around each ideal partner."""
        n = len(self.ranked)
        graph: nx.Graph[int | str] = nx.Graph()
        graph.add_nodes_from(range(n))
        pairs: set[tuple[int, int]] = set()
        if window is None:
            pairs = {(i, j) for i in range(n) for j in range(i + 1, n)}
        else:
            for i in range(n):
                for j in range(i + 1, min(n, i + window + 1)):  # ranking neighbours
                    pairs.add((i, j))
                ideal = i - self.place[i] + (self.place[i] + self.size[i] // 2) % self.size[i]
                for j in range(ideal - window, ideal + window + 1):
                    if 0 <= j < n and j != i:
                        pairs.add((min(i, j), max(i, j)))
        for i, j in sorted(pairs):
            w = self.weight(i, j)
            if w is not None:
                graph.add_edge(i, j, weight=w)
        if self.with_bye:
            graph.add_node(BYE)
            candidates = range(n) if window is None else range(max(0, n - 4 * window), n)
            for i in candidates:
                w = self.bye_weight(i)
                if w is not None:
                    graph.add_edge(i, BYE, weight=w)
        return graph


def rank(players: Sequence[SwissPlayer], order: Sequence[str]) -> list[SwissPlayer]:
    """Players by score, then by ``order`` (the seeding: rating, then joining)."""
    seed = {p: i for i, p in enumerate(order)}
    return sorted(players, key=lambda p: (-p.score, seed.get(p.player_id, len(seed)), p.player_id))


def pair(
    players: Sequence[SwissPlayer],
    *,
    order: Sequence[str],
    forbidden: Collection[tuple[str, str]] = (),
) -> SwissPairing:
    """Pair one round of ``players`` (``order``: the seeding, best first)."""
    ranked = rank(players, order)
    graph = _Graph(ranked, forbidden)
    n = len(ranked)
    vertices = n + (1 if graph.with_bye else 0)
    window: int | None = None if n <= DENSE_LIMIT else WINDOW
    while True:
        matching = nx.max_weight_matching(graph.build(window), maxcardinality=True)
        rematches = sum(
            1
            for u, v in matching
            if BYE not in (u, v) and ranked[int(v)].player_id in ranked[int(u)].opponents
        )
        # The sparse graph is only trusted when it loses nothing of rules 1-2.
        if window is None or (len(matching) == vertices // 2 and rematches == 0):
            break
        window = window * 4 if window * 4 < n else None
    return _boards(ranked, matching)


def _boards(ranked: Sequence[SwissPlayer], matching: set[tuple[object, object]]) -> SwissPairing:
    bye: str | None = None
    pairs: list[tuple[int, int]] = []
    placed: set[int] = set()
    for u, v in matching:
        if u == BYE or v == BYE:
            i = int(v if u == BYE else u)  # type: ignore[call-overload]
            bye = ranked[i].player_id
            placed.add(i)
            continue
        i, j = sorted((int(u), int(v)))  # type: ignore[call-overload]
        pairs.append((i, j))
        placed.update((i, j))
    # Board order: the pair with the higher score first, then the higher rank.
    pairs.sort(key=lambda ij: (-max(ranked[ij[0]].score, ranked[ij[1]].score), ij[0]))
    boards = tuple(
        seats_for(ranked[i], ranked[j], board) for board, (i, j) in enumerate(pairs, start=1)
    )
    unpaired = tuple(p.player_id for k, p in enumerate(ranked) if k not in placed)
    return SwissPairing(boards=boards, bye=bye, unpaired=unpaired)
