"""Swiss pairing as weighted maximum matching (``networkx.max_weight_matching``).

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
5. **Rating order within the group** (FIDE Dutch: the top half meets the
   bottom half, 1st v (n/2+1)th): ``C² - min(dev, C)²`` where ``dev`` is how
   far the pair is from that ideal: for two players of one group at places
   ``i < j`` of ``m``, ``|j - i - m//2|``; for a floater, its distance from the
   bottom of its group plus its opponent's distance from the top of theirs;
   for the bye, the player's distance from the bottom of the whole ranking
   (the lowest-ranked player without a bye gets it).
6. **Seats balance**: each player wants a seat (the one they had less often,
   else the other than last time) with a strength: 3 absolute (two seats
   ahead, or the same seat twice running), 2 strong (one ahead), 1 mild
   (even, alternate). An edge is worth 3 when both can get their wish, else
   ``3 - the weaker wish's strength``; ``seats_for`` then seats the pair.
   Seats come after rating order (FIDE's Dutch puts colours first): in
   Matcha the first dealer is drawn at random, so a seat is worth far less
   than a white piece, and seating within each pair already gives at least
   one player their wish.

Up to ``DENSE_LIMIT`` players the round is one complete graph. A bigger
field is solved score group by score group, top down, in chunks of
``CHUNK`` players that keep the Dutch order (``_bracketed``): blossom
matching in pure Python is slow on hundreds of vertices with these weights
(a 1,000-player round took 15-30 s as one graph, 0.3 s in chunks). What a
chunk leaves over goes on to the next; the float it causes is priced into
the chunk's weights, so the sum of squared score differences comes out as
the whole graph's (tests/tournaments/test_tournament_swiss.py compares them).
If the field's last chunk cannot pair everyone without a rematch, the round
is solved again as one sparse graph, widened up to the complete one: rules
1 and 2 are never given up to speed. docs/tournaments.md repeats this.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

import msgspec
import networkx as nx

from schemas.cards import Seat

DENSE_LIMIT: Final = 40
"""Up to this many players the round is one complete graph."""
CHUNK: Final = 40
"""Bigger fields are solved in chunks of about this many players (``_bracketed``)."""
CHUNK_WINDOW: Final = 4
"""In a chunk, each player is joined to the players this close to their ideal
opponent and to their neighbours in the ranking."""
WINDOW: Final = 6
"""The whole-field sparse graph's first width (the last resort)."""
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
        self.u_rank = edges * 3 + 1
        self.u_score = self.u_rank * (edges * RATING_CAP**2 + 1)
        self.u_bye = self.u_score * (3 * edges * self.span**2 + 1)
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
            + (RATING_CAP**2 - dev * dev) * self.u_rank
            + _seat_value(a, b)
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
            + (RATING_CAP**2 - dev * dev) * self.u_rank
            + 3
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
    if len(ranked) <= DENSE_LIMIT:
        return _boards(ranked, _matching(graph.build(None)))
    found = _bracketed(graph)
    if found is not None:
        return _boards(ranked, found)
    return _boards(ranked, _global(graph))


def _matching(graph: nx.Graph[int | str]) -> set[tuple[int | str, int | str]]:
    found: set[tuple[int | str, int | str]] = nx.max_weight_matching(graph, maxcardinality=True)
    return found


def _rematches(graph: _Graph, matching: Collection[tuple[int | str, int | str]]) -> int:
    ranked = graph.ranked
    return sum(
        1
        for u, v in matching
        if isinstance(u, int) and isinstance(v, int) and ranked[v].player_id in ranked[u].opponents
    )


def _global(graph: _Graph) -> set[tuple[int | str, int | str]]:
    """One sparse graph of the whole field, widened until it loses nothing of
    rules 1-2 (as many pairs as the complete graph, no avoidable rematch)."""
    n = len(graph.ranked)
    vertices = n + (1 if graph.with_bye else 0)
    window: int | None = WINDOW
    while True:
        matching = _matching(graph.build(window))
        if window is None or (len(matching) == vertices // 2 and _rematches(graph, matching) == 0):
            return matching
        window = window * 4 if window * 4 < n else None


def _bracketed(graph: _Graph) -> set[tuple[int | str, int | str]] | None:
    """The matching solved score group by score group, top down, in chunks.

    A bracket is a score group plus the players floating down into it. A big
    group is cut into chunks that keep Dutch order: chunk k holds the k-th
    slice of its top half and the k-th slice of its bottom half, so each
    player's ideal opponent is in its chunk; whoever a chunk cannot pair
    without a rematch (or leaves over, being odd) goes on to the next chunk,
    and after the group's last chunk floats down to the next group. Only the
    field's last chunk may pair a rematch, and only it holds the bye vertex.
    The same weights as the whole graph, on graphs of ``CHUNK`` players:
    blossom matching is fast on those. None when that last chunk cannot pair
    everyone without a rematch: the caller then solves the whole field at once.
    """
    ranked = graph.ranked
    groups: list[list[int]] = []
    for i, player in enumerate(ranked):
        if groups and ranked[groups[-1][0]].score == player.score:
            groups[-1].append(i)
        else:
            groups.append([i])
    carry: list[int] = []
    matching: set[tuple[int | str, int | str]] = set()
    for g, group in enumerate(groups):
        half = len(group) // 2
        top, bottom = group[:half], group[half:]
        slices = max(1, -(-half // (CHUNK // 2)))
        for k in range(slices):
            last = g == len(groups) - 1 and k == slices - 1
            lo, hi = k * CHUNK // 2, (k + 1) * CHUNK // 2
            members = carry + top[lo:hi] + (bottom[lo:] if k == slices - 1 else bottom[lo:hi])
            # Whoever the group's last chunk leaves over floats to the next
            # group: that float's cost counts against leaving them over.
            below = None
            if k == slices - 1 and g + 1 < len(groups):
                below = ranked[groups[g + 1][0]].score
            found = _matching(_chunk_graph(graph, members, len(carry), last=last, below=below))
            matching |= found
            paired = {v for edge in found for v in edge}
            carry = [v for v in members if v not in paired]
    expected = 1 if graph.with_bye else 0
    if carry or len(matching) * 2 != len(ranked) + expected or _rematches(graph, matching):
        return None
    return matching


def _chunk_graph(
    graph: _Graph, members: list[int], carried: int, *, last: bool, below: int | None
) -> nx.Graph[int | str]:
    """A chunk's graph: near the ideal opponent and the neighbours (everyone for
    the few players carried in), rematches only in the field's last chunk.

    ``below``: the next group's score, when players left over here float to
    it. Each edge then also earns, at the score level, what floating would
    have cost its two players (``(score - below)²`` each): the matching so
    minimises the squared differences of the pairs made here *and* of the
    floats it causes, which a chunk alone could not see.
    """
    g: nx.Graph[int | str] = nx.Graph()
    g.add_nodes_from(members)
    ranked = graph.ranked
    size = len(members)
    offset = (size - carried) // 2
    for x in range(size):
        for y in range(x + 1, size):
            near = x < carried or y - x <= CHUNK_WINDOW or abs(y - x - offset) <= CHUNK_WINDOW
            if not (near or last):
                continue
            i, j = members[x], members[y]
            if i > j:
                i, j = j, i
            if not last and ranked[j].player_id in ranked[i].opponents:
                continue
            w = graph.weight(i, j)
            if w is not None:
                if below is not None:
                    saved = (ranked[i].score - below) ** 2 + (ranked[j].score - below) ** 2
                    w += saved * graph.u_score
                g.add_edge(i, j, weight=w)
    if last and graph.with_bye:
        g.add_node(BYE)
        for i in members:
            w = graph.bye_weight(i)
            if w is not None:
                g.add_edge(i, BYE, weight=w)
    return g


def _boards(
    ranked: Sequence[SwissPlayer], matching: Collection[tuple[int | str, int | str]]
) -> SwissPairing:
    bye: str | None = None
    pairs: list[tuple[int, int]] = []
    placed: set[int] = set()
    for u, v in matching:
        if u == BYE or v == BYE:
            i = int(v if u == BYE else u)
            bye = ranked[i].player_id
            placed.add(i)
            continue
        i, j = sorted((int(u), int(v)))
        pairs.append((i, j))
        placed.update((i, j))
    # Board order: the pair with the higher score first, then the higher rank.
    pairs.sort(key=lambda ij: (-max(ranked[ij[0]].score, ranked[ij[1]].score), ij[0]))
    boards = tuple(
        seats_for(ranked[i], ranked[j], board) for board, (i, j) in enumerate(pairs, start=1)
    )
    unpaired = tuple(p.player_id for k, p in enumerate(ranked) if k not in placed)
    return SwissPairing(boards=boards, bye=bye, unpaired=unpaired)
