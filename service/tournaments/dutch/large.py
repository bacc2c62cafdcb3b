"""Big brackets without a weighted matching: the same answer, found by counting.

A blossom matching of a 500-player bracket takes seconds, and imposing
FIDE's order of generation (D.1) takes one matching per player of S1. But in
a homogeneous bracket (one score, no MDPs, not the final round's topscorers)
every quality criterion that can differ between candidates depends only on
each player's *type*: the seat they prefer and how strongly (C.10, C.11),
and, for the one player left over in an odd bracket, their float history
and whether they had a bye (C.2, C.12, C.14, C.16, C.18). So:

1. the best value any candidate can reach is a small transportation problem
   between the types of S1 and of S2 (a min-cost flow on a dozen nodes),
   checked against the best value of *any* pairing of the bracket (exchanges
   between S1 and S2 allowed): if an exchange could do better, this module
   declines and the weighted matching decides;
2. FIDE's order (D.1: S1's players in order, each with the first player of
   S2 that still allows the best value) is then a depth-first walk in which
   each step asks the small problem whether the rest can still reach it.

Rematches and C.3 are honoured by the walk itself (a forbidden partner is
skipped; a dead end backtracks). The small problem ignores rematches, so it
can only be optimistic: the first complete pairing the walk finds reaches
the best value the types allow and every partner skipped could not, so it
is exactly the candidate the weighted matching would choose. If the walk
backtracks too long (the types' best is out of reach), the module declines
and the weighted matching decides. Measured: a 475-player bracket of round
2 of a 1,000-player Swiss went from ~50 s to ~0.05 s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

import rustworkx as rx

from service.tournaments.dutch.card import ABSOLUTE, STRONG, Card, rank_key
from service.tournaments.dutch.weights import allowed

LARGE: Final = 40
"""Brackets from this size on try the counting first (below it the weighted
matching is fast and this module's bookkeeping would not pay)."""

# Costs, one level per criterion in FIDE's order; each level's unit exceeds
# anything a bracket's lower levels can add up to (counts stay below 10**4).
TOP_WIDE: Final = 10**28
"""C.8: a topscorer (or a topscorer's opponent) whose colour difference goes beyond ±2."""
TOP_THIRD: Final = 10**24
"""C.9: ... who gets the same seat a third time in a row."""
CONFLICT: Final = 10**20
"""C.10: a player who does not get their preferred seat."""
STRONG_LOST: Final = 10**16
"""C.11: ... and it was a strong (or absolute) preference."""
FLOAT_AGAIN: Final = 10**12
"""C.12 / C.16: a player who downfloats again after the previous round."""
UP_AGAIN: Final = 10**8
"""C.13 / C.17: a player who upfloats again after the previous round."""
FLOAT_AGAIN_2: Final = 10**4
"""C.14 / C.18: a player who downfloats again after the round before it."""
UP_AGAIN_2: Final = 1
"""C.15 / C.19: ... upfloats again after the round before it."""

Type = tuple[int, int, bool, bool, bool, bool, int, bool]
"""(preferred seat or -1, strength, downfloat last round, the round before,
had a bye, topscorer, |colour difference|, the same seat twice running)."""


class _OutOfSteps(Exception):
    """The walk has backtracked more than a big bracket's worth."""


def type_of(card: Card) -> Type:
    side, strength = card.preference
    return (
        -1 if side is None else side,
        strength,
        card.floats[0] == "down",
        card.floats[1] == "down",
        card.had_bye,
        card.topscorer,
        abs(card.difference),
        card.double,
    )


def undecided(t: Type, u: Type) -> bool:
    """Two absolute preferences for the same seat whose loser only E.3 could
    name (equal colour differences, one of them twice running): the cost of
    the pair then depends on more than the types."""
    return t[0] >= 0 and t[0] == u[0] and t[1] == u[1] == ABSOLUTE and t[6] == u[6] and t[7] != u[7]


def pair_cost(t: Type, u: Type) -> int | None:
    """C.8-C.11 for a pair of types (None: C.3 forbids it)."""
    if t[0] < 0 or t[0] != u[0]:
        return 0
    top = t[5] or u[5]
    if t[1] == ABSOLUTE and u[1] == ABSOLUTE and not top:
        return None
    cost = CONFLICT + (STRONG_LOST if min(t[1], u[1]) >= STRONG else 0)
    if top:
        # E.2: the weaker preference loses; of two absolute ones, the smaller
        # colour difference. An absolute loser goes beyond ±2 (C.8) or gets
        # a third same seat (C.9).
        weaker = t[1] < u[1] if t[1] != u[1] else t[6] <= u[6]
        loser = t if weaker else u
        if loser[1] == ABSOLUTE:
            cost += TOP_WIDE * (loser[6] >= 2) + TOP_THIRD * loser[7]
    return cost


def leftover_cost(u: Type, last: bool) -> int | None:
    """The player left over: the bye in the last bracket (never a second one), else a downfloat."""
    if last and u[4]:
        return None
    return FLOAT_AGAIN * u[2] + FLOAT_AGAIN_2 * u[3]


def _min_cost(
    a: tuple[tuple[Type, int], ...], b: tuple[tuple[Type, int], ...], spare: bool, last: bool
) -> int | None:
    """The least total cost of assigning every type count of ``a`` to ``b``
    (``spare``: ``b`` has one more, left over), None if impossible. Successive
    shortest paths (Bellman-Ford) on the type graph: a dozen nodes."""
    rows: list[tuple[int, list[int | None]]] = [
        (count, [pair_cost(t, u) for u, _ in b]) for t, count in a
    ]
    if spare:
        rows.append((1, [leftover_cost(u, last) for u, _ in b]))
    na, nb = len(rows), len(b)
    # Nodes: 0 source, 1..na rows, na+1..na+nb columns, na+nb+1 sink.
    sink = na + nb + 1
    head: list[list[int]] = [[] for _ in range(sink + 1)]
    to: list[int] = []
    cap: list[int] = []
    cost: list[int] = []

    def edge(u: int, v: int, c: int, w: int) -> None:
        head[u].append(len(to))
        to.append(v)
        cap.append(c)
        cost.append(w)
        head[v].append(len(to))
        to.append(u)
        cap.append(0)
        cost.append(-w)

    for i, (count, costs) in enumerate(rows, start=1):
        edge(0, i, count, 0)
        for j, w in enumerate(costs):
            if w is not None:
                edge(i, na + 1 + j, count, w)
    for j, (_, count) in enumerate(b):
        edge(na + 1 + j, sink, count, 0)
    need = sum(count for count, _ in rows)
    total = 0
    inf = 1 << 200  # above any cost: a cost level reaches 10**20
    while need:
        dist = [inf] * (sink + 1)
        via = [-1] * (sink + 1)
        dist[0] = 0
        for _ in range(sink + 1):
            changed = False
            for u in range(sink + 1):
                if dist[u] == inf:
                    continue
                for e in head[u]:
                    if cap[e] and dist[u] + cost[e] < dist[to[e]]:
                        dist[to[e]] = dist[u] + cost[e]
                        via[to[e]] = e
                        changed = True
            if not changed:
                break
        if dist[sink] == inf:
            return None
        push, v = need, sink
        while v:
            e = via[v]
            push = min(push, cap[e])
            v = to[e ^ 1]
        v = sink
        while v:
            e = via[v]
            cap[e] -= push
            cap[e ^ 1] += push
            v = to[e ^ 1]
        total += push * dist[sink]
        need -= push
    return total


@lru_cache(maxsize=100_000)
def _cached(
    a: tuple[tuple[Type, int], ...], b: tuple[tuple[Type, int], ...], spare: bool, last: bool
) -> int | None:
    return _min_cost(a, b, spare, last)


def _key(counts: Counter[Type]) -> tuple[tuple[Type, int], ...]:
    return tuple(sorted((t, c) for t, c in counts.items() if c > 0))


def _any_pairing_cost(types: Counter[Type], spare: bool, last: bool) -> int | None:
    """The least cost over every pairing of the bracket (S1 and S2 mixed): a
    lower bound the S1-S2 candidates must reach for no exchange to be needed.
    Found as the assignment of the bracket to itself with each pair counted
    twice (a perfect matching of a multiset is half of a symmetric assignment)."""
    if spare:
        best: int | None = None
        for u in [t for t, c in types.items() if c]:
            left = leftover_cost(u, last)
            if left is None:
                continue
            rest = Counter(types)
            rest[u] -= 1
            inner = _any_pairing_cost(rest, False, last)
            if inner is not None and (best is None or inner + left < best):
                best = inner + left
        return best
    key = _key(types)
    doubled = _cached(key, key, False, last)
    return None if doubled is None else doubled // 2


def pair_large(
    mdps: Sequence[Card],
    residents: Sequence[Card],
    *,
    last: bool,
    forbidden: set[frozenset[str]],
    final_round: bool,
    lowers: Sequence[Card],
    rounds_played: int,
) -> tuple[list[tuple[Card, Card]], list[Card]] | None:
    """A big bracket's pairs and its player left over, by counting (None: the
    weighted matching decides): without MDPs, or with one."""
    if mdps:
        return pair_with_mdps(
            mdps, residents, last=last, forbidden=forbidden, final_round=final_round,
            lowers=lowers, rounds_played=rounds_played,
        )  # fmt: skip
    return _pair_homogeneous(
        residents, last=last, forbidden=forbidden, final_round=final_round,
        lowers=lowers, rounds_played=rounds_played,
    )  # fmt: skip


def _pair_homogeneous(
    residents: Sequence[Card],
    *,
    last: bool,
    forbidden: set[frozenset[str]],
    final_round: bool,
    lowers: Sequence[Card],
    rounds_played: int,
) -> tuple[list[tuple[Card, Card]], list[Card]] | None:
    """The bracket's pairs and its player left over, or None (the weighted matching decides)."""
    ranked = sorted(residents, key=rank_key)
    n = len(ranked)
    if n < LARGE or len({c.score for c in ranked}) != 1 or n > 9_999:
        return None
    if _undecidable(ranked):
        return None
    spare = n % 2 == 1
    types = {c.player_id: type_of(c) for c in ranked}
    plan = _plan(ranked, types, last)
    if plan is None:
        return None
    best, s1, s2 = plan
    a = Counter(types[c.player_id] for c in s1)
    b = Counter(types[c.player_id] for c in s2)
    pairs: list[tuple[Card, Card]] = []
    free = list(s2)
    budget = [2 * len(s1) + 200]

    def walk(k: int, target: int) -> bool:
        """S1's k-th player and the rest: depth first, partners in S2's order,
        so the first complete pairing found is the first in FIDE's order; a
        partner is tried only if the small problem says the rest can still
        reach ``target`` (never wrong when it says no)."""
        if k == len(s1):
            return True
        i = s1[k]
        t = types[i.player_id]
        a[t] -= 1
        failed: set[Type] = set()
        for j in list(free):
            u = types[j.player_id]
            if u in failed or not allowed(i, j, forbidden):
                continue
            step = pair_cost(t, u)
            b[u] -= 1
            rest = None if step is None else _cached(_key(a), _key(b), spare, last)
            if step is None or rest is None or rest + step != target:
                b[u] += 1
                failed.add(u)
                continue
            budget[0] -= 1
            if budget[0] < 0:
                raise _OutOfSteps
            at = free.index(j)
            free.pop(at)
            pairs.append((i, j))
            if walk(k + 1, rest):
                return True
            pairs.pop()
            free.insert(at, j)
            b[u] += 1
        a[t] += 1
        return False

    try:
        if not walk(0, best):
            return None
    except _OutOfSteps:
        return None  # rematches make the types' best unreachable: matching decides
    if free and not last and not _next_pairs_fully(free[0], lowers, forbidden):
        # C.7 (above every criterion here): the player floating down must let
        # the next bracket pair as many as it could; with them it does, and
        # then no other choice of floater can do better there.
        return None
    return pairs, free


def _next_pairs_fully(
    floater: Card, lowers: Sequence[Card], forbidden: set[frozenset[str]]
) -> bool:
    cards = [floater, *lowers]
    graph: rx.PyGraph[int, int] = rx.PyGraph()
    graph.add_nodes_from(range(len(cards)))
    for i, a in enumerate(cards):
        for j in range(i + 1, len(cards)):
            if allowed(a, cards[j], forbidden):
                graph.add_edge(i, j, 1)
    found = rx.max_weight_matching(graph, max_cardinality=True, weight_fn=lambda w: w)
    return len(found) == len(cards) // 2


def _undecidable(cards: Sequence[Card]) -> bool:
    present = {type_of(c) for c in cards if c.topscorer} | {type_of(c) for c in cards}
    tops = [t for t in present if t[5]]
    return any(undecided(t, u) for t in tops for u in present)


def _plan(
    ranked: Sequence[Card], types: dict[str, Type], last: bool
) -> tuple[int, list[Card], list[Card]] | None:
    """S1 and S2 of the first candidates in FIDE's order that can reach the
    bracket's best value, and that value: the original halves if they can
    (transpositions only), else the first single exchange by D.2 (fewest
    players moved; the smallest difference of the pairing numbers moved up
    and down; the highest moved down; the lowest moved up). None: no single
    exchange reaches it, or the counting cannot tell: the weighted matching
    decides."""
    half = len(ranked) // 2
    spare = len(ranked) % 2 == 1
    s1, s2 = list(ranked[:half]), list(ranked[half:])
    a = Counter(types[c.player_id] for c in s1)
    b = Counter(types[c.player_id] for c in s2)
    anyway = _any_pairing_cost(a + b, spare, last)
    if anyway is None:
        return None
    best = _cached(_key(a), _key(b), spare, last)
    if best == anyway:
        return anyway, s1, s2
    place = {c.player_id: k for k, c in enumerate(ranked)}
    for k in (1, 2):
        found = _exchanges(s1, s2, a, b, k, types, place, spare, last, anyway)
        if found is not None:
            down, up = found
            s1 = sorted([c for c in s1 if c not in down] + up, key=rank_key)
            s2 = sorted([c for c in s2 if c not in up] + down, key=rank_key)
            return anyway, s1, s2
    return None


def _exchanges(
    s1: list[Card],
    s2: list[Card],
    a: Counter[Type],
    b: Counter[Type],
    k: int,
    types: dict[str, Type],
    place: dict[str, int],
    spare: bool,
    last: bool,
    target: int,
) -> tuple[list[Card], list[Card]] | None:
    """The first exchange of ``k`` players (D.2) after which S1 and S2 can
    reach ``target``: for each choice of types moved down and up, the
    players are the last of those types in S1 and the first in S2 (the
    smallest difference of pairing numbers for those types); then D.2.b-d."""
    from itertools import combinations_with_replacement

    def pick(side: list[Card], wanted: tuple[Type, ...], from_end: bool) -> list[Card] | None:
        need = Counter(wanted)
        out: list[Card] = []
        for c in reversed(side) if from_end else side:
            t = types[c.player_id]
            if need[t] > 0:
                need[t] -= 1
                out.append(c)
        return out if not +need else None

    best: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], list[Card], list[Card]] | None = None
    downs = [t for t, c in a.items() if c]
    ups = [u for u, c in b.items() if c]
    for down_types in combinations_with_replacement(sorted(downs), k):
        if any(Counter(down_types)[t] > a[t] for t in down_types):
            continue
        for up_types in combinations_with_replacement(sorted(ups), k):
            if any(Counter(up_types)[u] > b[u] for u in up_types):
                continue
            a2, b2 = Counter(a), Counter(b)
            for t in down_types:
                a2[t] -= 1
                b2[t] += 1
            for u in up_types:
                b2[u] -= 1
                a2[u] += 1
            if _cached(_key(a2), _key(b2), spare, last) != target:
                continue
            down = pick(s1, down_types, from_end=True)
            up = pick(s2, up_types, from_end=False)
            if down is None or up is None:
                continue
            dp = sorted((place[c.player_id] for c in down), reverse=True)
            upp = sorted(place[c.player_id] for c in up)
            key = (sum(upp) - sum(dp), tuple(-x for x in dp), tuple(upp))
            if best is None or key < best[0]:
                best = (key, down, up)
    return None if best is None else (best[1], best[2])


def _remainder_cost(ranked: Sequence[Card], types: dict[str, Type], last: bool) -> int | None:
    """The best a homogeneous remainder can do (None: the counting cannot tell)."""
    plan = _plan(ranked, types, last)
    return None if plan is None else plan[0]


def pair_with_mdps(
    mdps: Sequence[Card],
    residents: Sequence[Card],
    *,
    last: bool,
    forbidden: set[frozenset[str]],
    final_round: bool,
    lowers: Sequence[Card],
    rounds_played: int,
) -> tuple[list[tuple[Card, Card]], list[Card]] | None:
    """A big bracket with one MDP (the odd player of the bracket above): D.3
    puts it in S1 if it can be paired at all; D.1 gives it the highest-ranked
    resident that still lets the whole bracket reach its best value; the
    remainder is then a homogeneous bracket (``pair_large``). More MDPs: the
    weighted matching decides."""
    ranked = sorted(residents, key=rank_key)
    movers = sorted(mdps, key=rank_key)
    if len(movers) != 1 or len({c.score for c in ranked}) != 1:
        return None
    if len(ranked) - len(movers) < LARGE or _undecidable([*movers, *ranked]):
        return None
    types = {c.player_id: type_of(c) for c in [*movers, *ranked]}

    def mdp_cost(m: Card, r: Card) -> int | None:
        step = pair_cost(types[m.player_id], types[r.player_id])
        if step is None or not allowed(m, r, forbidden):
            return None
        return step + UP_AGAIN * (r.floats[0] == "up") + UP_AGAIN_2 * (r.floats[1] == "up")

    pairs: list[tuple[Card, Card]] = []
    pool = list(ranked)
    for m in movers:
        # Each candidate's value: its pair and the best the remainder can then
        # do, which depends only on the candidate's type and on which side of
        # the remainder's S1/S2 boundary it leaves (memo by those). Where the
        # counting cannot tell a remainder's best, its lower bound must show
        # that the candidate cannot be the one chosen, or this declines.
        seen: dict[tuple[Type, bool], tuple[int | None, int | None]] = {}
        boundary = (len(pool) - 1) // 2
        options: list[tuple[Card, int | None, int]] = []  # (resident, exact, lower bound)
        for pos, r in enumerate(pool):
            step = mdp_cost(m, r)
            if step is None:
                continue
            key = (types[r.player_id], pos < boundary)
            if key not in seen:
                rest = [c for c in pool if c is not r]
                exact = _remainder_cost(rest, types, last)
                spare = len(rest) % 2 == 1
                bound = _any_pairing_cost(Counter(types[c.player_id] for c in rest), spare, last)
                seen[key] = (exact, bound)
            exact, bound = seen[key]
            if bound is None:
                continue  # even the types cannot pair the rest
            options.append(
                (
                    r,
                    None if exact is None else step + exact,
                    step + (bound if exact is None else exact),
                )
            )
        known = [v for _, v, _ in options if v is not None]
        if not known:
            return None
        best = min(known)
        chosen_at = next(k for k, (_, v, _) in enumerate(options) if v == best)
        for k, (_, v, bound) in enumerate(options):
            if v is None and (bound < best or (bound == best and k < chosen_at)):
                return None
        chosen = options[chosen_at][0]
        pairs.append((m, chosen))
        pool.remove(chosen)
    done = _pair_homogeneous(
        pool,
        last=last,
        forbidden=forbidden,
        final_round=final_round,
        lowers=lowers,
        rounds_played=rounds_played,
    )
    if done is None:
        return None
    return pairs + done[0], done[1]
