"""Pairing one bracket: the best candidate by C.5-C.19, the first in FIDE's order of generation.

The weights (``weights.py``) make a maximum-weight matching of the bracket's
graph a pairing that satisfies the quality criteria as well as any can. Many
pairings may do so equally well; C.04.3 B.8 then takes the one generated
first (D.1 transpositions of S2, D.2 exchanges between S1 and S2 in a
homogeneous bracket or remainder, D.3 MDP exchanges in a heterogeneous one).
That order is imposed step by step, as bbpPairings does it: a small
incentive in the order bits (below every criterion, so no criterion is ever
traded for it) for one player's preferred partners, a new matching, the pair
then fixed, the next player. A step whose answer the current matching
already gives (the player is paired with the first partner it could want)
needs no new matching: most steps in a big bracket are such steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import rustworkx as rx

from service.tournaments.dutch.card import Card, rank_key
from service.tournaments.dutch.weights import CRITERIA, Role, Scope, allowed


def _zero(a: Card, b: Card, s: Scope) -> int:
    return 0


def perfect(cards: Sequence[Card], forbidden: set[frozenset[str]]) -> bool:
    """Whether ``cards`` (an even number) can all be paired by the absolute criteria."""
    left = sorted(cards, key=rank_key)
    while left:  # a greedy pass first: it nearly always succeeds
        a = left.pop(0)
        b = next((x for x in left if allowed(a, x, forbidden)), None)
        if b is None:
            break
        left.remove(b)
    else:
        return True
    graph: rx.PyGraph[int, int] = rx.PyGraph()
    graph.add_nodes_from(range(len(cards)))
    for i, a in enumerate(cards):
        for j in range(i + 1, len(cards)):
            if allowed(a, cards[j], forbidden):
                graph.add_edge(i, j, 1)
    found = rx.max_weight_matching(graph, max_cardinality=True, weight_fn=lambda w: w)
    return 2 * len(found) == len(cards)


RUST_LIMIT_BITS = 120
"""rustworkx keeps weights in 128-bit integers (and sums them): wider weights
go to networkx, which uses Python's integers (slower, exact)."""


class Matcher:
    """A weighted graph on a bracket's players and its maximum-weight matching."""

    def __init__(self, players: Sequence[Card]) -> None:
        self.players = list(players)
        self.index = {c.player_id: i for i, c in enumerate(self.players)}
        self.weights: dict[tuple[int, int], int] = {}
        self.removed: set[int] = set()
        self.mate: dict[int, int] = {}
        self.shift = 0
        """Where the order bits start (above the hints)."""

    def set(self, i: int, j: int, weight: int) -> None:
        key = (i, j) if i < j else (j, i)
        if weight > 0:
            self.weights[key] = weight
        else:
            self.weights.pop(key, None)

    def add(self, i: int, others: Sequence[int], values: Sequence[int]) -> None:
        """Add ``values[k]`` (in order units) to the edge ``i - others[k]`` (where there is one)."""
        shift = self.shift
        for j, v in zip(others, values, strict=True):
            v <<= shift
            key = (i, j) if i < j else (j, i)
            w = self.weights.get(key)
            if w is not None:
                self.weights[key] = w + v

    def cut(self, i: int, others: Sequence[int]) -> None:
        for j in others:
            self.weights.pop((i, j) if i < j else (j, i), None)

    def fix(self, i: int, j: int) -> None:
        """``i`` and ``j`` are paired: they leave the graph."""
        self.removed.update((i, j))
        for key in [k for k in self.weights if i in k or j in k]:
            del self.weights[key]

    def solve(self) -> None:
        top = max(self.weights.values(), default=0)
        if top.bit_length() <= RUST_LIMIT_BITS:
            graph: rx.PyGraph[int, int] = rx.PyGraph()
            graph.add_nodes_from(range(len(self.players)))
            graph.add_edges_from([(i, j, w) for (i, j), w in self.weights.items()])
            found = rx.max_weight_matching(graph, weight_fn=lambda w: w)
        else:
            g: nx.Graph[int] = nx.Graph()
            g.add_weighted_edges_from([(i, j, w) for (i, j), w in self.weights.items()])
            found = nx.max_weight_matching(g)
        self.mate = {}
        for i, j in found:
            self.mate[i] = j
            self.mate[j] = i


class Bracket:
    """One pairing bracket: its MDPs, residents and the next scoregroup (C.7)."""

    def __init__(
        self,
        mdps: Sequence[Card],
        residents: Sequence[Card],
        lowers: Sequence[Card],
        *,
        forbidden: set[frozenset[str]],
        collapsed: bool,
        rounds_played: int,
        final_round: bool,
    ) -> None:
        self.mdps = sorted(mdps, key=rank_key)
        self.residents = sorted(residents, key=rank_key)
        # C.7 only chooses among downfloaters: a bracket whose players can
        # all be paired has none, and the next scoregroup changes nothing.
        # (Not in the PPB, whose lower players are there for completion.)
        last = not lowers
        inside = [*self.mdps, *self.residents]
        if lowers and not collapsed and len(inside) % 2 == 0 and perfect(inside, forbidden):
            lowers = ()
        self.lowers = sorted(lowers, key=rank_key)
        # C.7 asks how well the next scoregroup pairs with this bracket's
        # downfloaters. A big next scoregroup absorbs any of them (each has
        # met fewer players than it holds): its top players, as many as the
        # bracket could float twice over plus everyone's rematches, answer
        # the same as all of it (the same parity kept), at a fraction of the
        # graph. Measured: a 16-player bracket above 470 players went from
        # a 486-node graph to 50 nodes. Not in the PPB, which needs them all.
        room = 2 * len(inside) + 2 * rounds_played + 4
        if not collapsed and len(self.lowers) > room:
            keep = room + (len(self.lowers) - room) % 2
            self.lowers = self.lowers[:keep]
        cards = [*self.mdps, *self.residents, *self.lowers]
        roles = {c.player_id: Role.MDP for c in self.mdps}
        roles |= {c.player_id: Role.RESIDENT for c in self.residents}
        roles |= {c.player_id: Role.LOWER for c in self.lowers}
        self.roles = roles
        scope = Scope(
            roles,
            cards,
            lowest_score=self.residents[-1].score,
            collapsed=collapsed,
            last=last,
            rounds_played=rounds_played,
            final_round=final_round,
        )
        self.m = Matcher(cards)
        n = len(cards)
        # C.6 is C.5 again in a bracket of one score without MDPs (every
        # downfloater has the same score difference): it takes no bits there.
        homogeneous = not self.mdps and len({c.score for c in self.residents}) == 1
        criteria = [
            (
                name,
                _zero
                if not scope.active(name, cards) or (name == "C.6" and homogeneous)
                else value,
            )
            for name, value in CRITERIA
        ]
        live = [k for k, (_, value) in enumerate(criteria) if value is not _zero]
        self.bits = max(1, (len(self.mdps) + len(self.residents)).bit_length())
        self.order_bits = 3 * max(self.bits, n.bit_length()) + 4
        edges: list[tuple[int, int, list[int]]] = []
        for i in range(n):
            for j in range(i + 1, n):
                if allowed(cards[i], cards[j], forbidden):
                    values = [0] * len(criteria)
                    for k in live:
                        values[k] = criteria[k][1](cards[i], cards[j], scope)
                    if any(values):
                        edges.append((i, j, values))
        # Each field as wide as the most its values can add up to over a
        # matching: every edge of a matching is charged to one of its ends,
        # so the sum of each player's largest |value| bounds it.
        widths = []
        for k in range(len(CRITERIA)):
            most = [0] * n
            for i, j, values in edges:
                v = abs(values[k])
                most[i] = max(most[i], v)
                most[j] = max(most[j], v)
            bound = sum(most)
            widths.append(bound.bit_length() + 1 if bound else 0)
        self.widths = widths
        criteria_bits = sum(widths)
        self.mdp_ix = list(range(len(self.mdps)))
        self.res_ix = list(range(len(self.mdps), len(self.mdps) + len(self.residents)))
        self.low_ix = list(range(len(self.mdps) + len(self.residents), n))
        # Hints, below the order bits: a small preference for the partner
        # FIDE's order would give first (S1's i-th for S2's i-th, an MDP for
        # the top resident). They never change the result (each step of
        # ``pair`` outweighs them all); they make the first matching already
        # the final one in most brackets, so most steps need no new matching.
        # Measured: a 200-player round 4 went from 100 matchings to a handful.
        hint = self._hints()
        hint_bits = (max(hint.values(), default=0) * (n // 2 + 1)).bit_length() + 1
        if criteria_bits + self.order_bits + hint_bits > RUST_LIMIT_BITS:
            hint, hint_bits = {}, 0
        for i, j, values in edges:
            w = 0
            for value, width in zip(values, widths, strict=True):
                w = (w << width) + value
            self.m.set(i, j, (w << (self.order_bits + hint_bits)) + hint.get((i, j), 0))
        self.m.shift = hint_bits
        self.pairs: list[tuple[int, int]] = []

    def _hints(self) -> dict[tuple[int, int], int]:
        mdps, res = self.mdp_ix, self.res_ix
        out: dict[tuple[int, int], int] = {}
        for a, i in enumerate(mdps):
            for b, j in enumerate(res):
                out[i, j] = (len(mdps) - a) * (len(res) - b)
        half = len(res) // 2
        s1, s2 = res[:half], res[half:]
        for a, i in enumerate(s1):
            for b, j in enumerate(s2):
                out[i, j] = (len(s1) - a) * (len(s2) - b)
        return out

    # -- reading the matching ----------------------------------------------------------

    def _role(self, i: int | None) -> Role | None:
        return None if i is None else self.roles[self.m.players[i].player_id]

    def _with_resident(self, i: int) -> bool:
        return self._role(self.m.mate.get(i)) == Role.RESIDENT

    def _in_s1(self, i: int) -> bool:
        mate = self.m.mate.get(i)
        return mate is not None and mate > i and self._role(mate) == Role.RESIDENT

    def _in_s2(self, i: int) -> bool:
        return not self._in_s1(i)

    def _fix(self, i: int, j: int) -> None:
        self.pairs.append((i, j))
        self.m.fix(i, j)

    # -- the order of generation ---------------------------------------------------------

    def pair(self) -> tuple[list[tuple[Card, Card]], list[Card]]:
        """The bracket's pairs and its downfloaters (in the last bracket: the bye)."""
        m = self.m
        m.solve()
        n = len(m.players)

        def free_res() -> list[int]:
            return [r for r in self.res_ix if r not in m.removed]

        # D.3: which MDPs are in S1 (paired with residents), lowest BSN first.
        s1_mdps = []
        for mdp in self.mdp_ix:
            if not self._with_resident(mdp):
                m.add(mdp, self.res_ix, [1] * len(self.res_ix))
                m.solve()
            if self._with_resident(mdp):
                s1_mdps.append(mdp)
                m.add(mdp, self.res_ix, [n] * len(self.res_ix))
        # D.1 for the MDPs: each takes the highest-ranked resident it can.
        for mdp in s1_mdps:
            self._take_first(mdp, free_res())
        # The remainder (a homogeneous bracket): D.2 exchanges, then D.1.
        rest = free_res()
        pairs = sum(1 for r in rest if self._role(m.mate.get(r)) == Role.RESIDENT) // 2
        s1, s2 = rest[:pairs], rest[pairs:]
        bb = self.bits
        for k, r in enumerate(rest):
            value = ((int(k < pairs) << (2 * bb)) - k) << 1
            later = rest[k + 1 :]
            m.add(r, later, [value] * len(later))
        if rest:
            m.solve()
        exchanges = sum(1 for r in s1 if self._in_s2(r))
        # D.2.c: the highest BSNs move from S1 to S2.
        left = exchanges
        for k in range(len(s1) - 1, -1, -1):
            if left == 0:
                break
            r = s1[k]
            below = s1[k + 1 :] + s2
            was_out = self._in_s2(r)
            if not was_out:
                m.add(r, below, [-1] * len(below))
                m.solve()
            if self._in_s2(r):
                left -= 1
                m.cut(r, below)
            if not was_out:
                m.add(r, below, [1] * len(below))
        # D.2.d: the lowest BSNs move from S2 to S1.
        left = exchanges
        for k, r in enumerate(s2):
            if left == 0:
                break
            above = s1 + s2[:k]
            was_in = self._in_s1(r)
            if not was_in:
                m.add(r, above, [-1] * len(above))
                m.solve()
            if self._in_s1(r):
                left -= 1
                m.cut(r, above + self.low_ix)
            if not was_in:
                m.add(r, above, [1] * len(above))
        new_s1 = [r for r in rest if self._in_s1(r)]
        new_s2 = [r for r in rest if self._in_s2(r)]
        for k, r in enumerate(new_s1):
            m.cut(r, new_s1[k + 1 :])
        for k, r in enumerate(new_s2):
            m.cut(r, new_s2[k + 1 :])
        for r in new_s1:
            self._take_first(r, [x for x in new_s2 if x not in m.removed])
        cards = m.players
        pairs_out = [(cards[i], cards[j]) for i, j in self.pairs]
        paired = {x for pair in self.pairs for x in pair}
        floaters = [cards[i] for i in self.mdp_ix + self.res_ix if i not in paired]
        return pairs_out, floaters

    def _take_first(self, i: int, candidates: Sequence[int]) -> None:
        """Pair ``i`` with the first of ``candidates`` (in rank order) that keeps
        the matching optimal; the current matching may already say so."""
        m = self.m
        if not candidates:
            return
        if m.mate.get(i) != candidates[0]:
            m.add(i, candidates[::-1], list(range(len(candidates))))
            m.solve()
        mate = m.mate.get(i)
        if mate is not None and mate in candidates:
            self._fix(i, mate)
