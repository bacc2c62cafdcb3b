"""The round: brackets from the top scoregroup down (C.04.3 A.3, A.9, B, D.9).

Each bracket is its MDPs (players floated down to it), its residents (one
scoregroup) and, for C.7, the next scoregroup. After a bracket is paired the
round must still be completable (C.4): the downfloaters and every player
below must admit a pairing by the absolute criteria (with the bye, if the
field is odd, to a player C.2 allows). If they do not, the remaining
scoregroups collapse into one (the CLB) and the bracket is paired again as
the penultimate pairing bracket (PPB), whose weights then maximise the pairs
of the whole rest of the round first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import groupby

import msgspec
import rustworkx as rx

from service.tournaments.dutch.bracket import Bracket
from service.tournaments.dutch.card import Card, rank_key
from service.tournaments.dutch.colours import seat_of_higher, seat_pair
from service.tournaments.dutch.large import pair_large
from service.tournaments.dutch.weights import allowed

BYE = "\x00bye"


class DutchPairing(msgspec.Struct, frozen=True, kw_only=True):
    boards: tuple[tuple[str, str], ...]
    """Seat 0 first, in FIDE's board order."""
    bye: str | None
    unpaired: tuple[str, ...]
    """Players no legal pairing can place (only with forbidden pairs or a tiny field)."""


def _completable(cards: Sequence[Card], forbidden: set[frozenset[str]]) -> bool:
    """Whether ``cards`` can all be paired by C.1-C.3, with one bye by C.2 when odd."""
    if not cards:
        return True
    ranked = sorted(cards, key=rank_key)
    # A greedy pass usually finds a complete pairing at once; only when it
    # does not is the exact answer (a maximum matching) needed.
    left = list(ranked)
    odd = len(left) % 2 == 1
    ok = True
    while left:
        a = left.pop(0)
        partner = next((b for b in left if allowed(a, b, forbidden)), None)
        if partner is None:
            if odd and not a.had_bye:
                odd = False
                continue
            ok = False
            break
        left.remove(partner)
    if ok:
        return True
    # A perfect matching of a sparse part of the graph (each player and the
    # next few allowed ones in rank order) is one of the whole: try that
    # before the complete graph (measured: 1.4 s to 20 ms at 1,000 players).
    return any(_matchable(ranked, forbidden, window) for window in (24, None))


def _matchable(ranked: Sequence[Card], forbidden: set[frozenset[str]], window: int | None) -> bool:
    graph: rx.PyGraph[int, int] = rx.PyGraph()
    n = len(ranked)
    graph.add_nodes_from(range(n + (n % 2)))
    for i in range(n):
        found = 0
        for j in range(i + 1, n):
            if allowed(ranked[i], ranked[j], forbidden):
                graph.add_edge(i, j, 1)
                found += 1
                if window is not None and found >= window:
                    break
    if n % 2:
        eligible = [i for i in range(n - 1, -1, -1) if not ranked[i].had_bye]
        for i in eligible if window is None else eligible[:window]:
            graph.add_edge(i, n, 1)
    found_matching = rx.max_weight_matching(graph, max_cardinality=True, weight_fn=lambda w: w)
    return 2 * len(found_matching) == n + (n % 2)


def _pairable(cards: Sequence[Card], forbidden: set[frozenset[str]]) -> list[Card]:
    """The most players who can be paired together (the rest cannot be paired at all)."""
    if _completable(cards, forbidden):
        return list(cards)
    ranked = sorted(cards, key=rank_key)
    n = len(ranked)
    graph: rx.PyGraph[int, int] = rx.PyGraph()
    graph.add_nodes_from(range(n + 1))
    for i in range(n):
        for j in range(i + 1, n):
            if allowed(ranked[i], ranked[j], forbidden):
                graph.add_edge(i, j, 2)
        if not ranked[i].had_bye:
            graph.add_edge(i, n, 1)
    found = rx.max_weight_matching(graph, max_cardinality=True, weight_fn=lambda w: w)
    placed = {x for edge in found for x in edge}
    keep = [c for k, c in enumerate(ranked) if k in placed]
    if len(keep) % 2 and not any(not c.had_bye for c in keep):
        keep = keep[:-1]
    return keep


def perfect_natural(
    mdps: Sequence[Card],
    residents: Sequence[Card],
    *,
    last: bool,
    forbidden: set[frozenset[str]],
    final_round: bool,
) -> tuple[list[tuple[Card, Card]], list[Card]] | None:
    """The bracket's first candidate (S1's i-th v S2's i-th, C.04.3 B.2), when it
    satisfies every quality criterion (B.8: a perfect candidate, chosen at once).

    Only for a homogeneous bracket without MDPs that is even, or the last one
    with an odd player out who may have the bye and did not downfloat in the
    last two rounds: there no other criterion can be in play (nobody floats,
    nobody's seat preference is refused, no topscorer's seat rule is broken).
    Measured: a round 1 of 1,000 players went from 30 s of matching to 10 ms.
    """
    n = len(residents)
    if mdps or len({c.score for c in residents}) != 1 or (n % 2 and not last):
        return None
    ranked = sorted(residents, key=rank_key)
    half = n // 2
    pairs = list(zip(ranked[:half], ranked[half : 2 * half], strict=True))
    for a, b in pairs:
        if not allowed(a, b, forbidden):
            return None
        (pa, _), (pb, _) = a.preference, b.preference
        if pa is not None and pa == pb:
            return None
        if final_round and (a.topscorer or b.topscorer) and _topscorer_rule_broken(a, b):
            return None
    floaters = ranked[2 * half :]
    for c in floaters:
        if c.had_bye or "down" in c.floats:
            return None
    return pairs, floaters


def _topscorer_rule_broken(a: Card, b: Card) -> bool:
    higher, lower = (a, b) if rank_key(a) <= rank_key(b) else (b, a)
    seat = seat_of_higher(higher, lower)
    for card, s in ((higher, seat), (lower, 1 - seat)):
        after = (*card.seats, s)
        if abs(after.count(0) - after.count(1)) > 2:
            return True
        if len(after) >= 3 and after[-1] == after[-2] == after[-3]:
            return True
    return False


def pair_round(
    cards: Sequence[Card],
    *,
    rounds_played: int,
    final_round: bool,
    forbidden: Collection[tuple[str, str]] = (),
) -> DutchPairing:
    """Pair one round of ``cards`` by the FIDE Dutch system."""
    barred = {frozenset(p) for p in forbidden}
    everyone = sorted(cards, key=rank_key)
    playable = _pairable(everyone, barred)
    unpaired = tuple(c.player_id for c in everyone if c not in playable)
    groups = [list(g) for _, g in groupby(playable, key=lambda c: c.score)]
    pairs: list[tuple[Card, Card]] = []
    mdps: list[Card] = []
    collapsed = False
    k = 0
    while k < len(groups):
        residents = groups[k]
        lowers = groups[k + 1] if k + 1 < len(groups) else []
        if not residents:  # every resident floated up into an MDP's pair
            k += 1
            continue
        quick = None
        if not collapsed:  # the PPB pairs with its lower players in view
            quick = perfect_natural(
                mdps, residents, last=not lowers, forbidden=barred, final_round=final_round
            )
            if quick is None:
                quick = pair_large(
                    mdps,
                    residents,
                    last=not lowers,
                    forbidden=barred,
                    final_round=final_round,
                    lowers=lowers,
                    rounds_played=rounds_played,
                )
        if quick is not None:
            found, floaters = quick
        else:
            bracket = Bracket(
                mdps,
                residents,
                lowers,
                forbidden=barred,
                collapsed=collapsed,
                rounds_played=rounds_played,
                final_round=final_round,
            )
            found, floaters = bracket.pair()
        rest = [*floaters, *(c for g in groups[k + 1 :] for c in g)]
        if lowers and not collapsed and not _completable(rest, barred):
            groups = [*groups[: k + 1], [c for g in groups[k + 1 :] for c in g]]
            collapsed = True
            continue
        pairs += found
        mdps = floaters
        k += 1
    bye = mdps[0].player_id if len(mdps) == 1 else None
    if len(mdps) > 1:
        unpaired += tuple(c.player_id for c in mdps)

    def board_key(pair: tuple[Card, Card]) -> tuple[int, int, int]:
        a, b = pair
        top = max(a.real_points, b.real_points)
        return -top, -(a.real_points + b.real_points), min(a.tpn, b.tpn)

    pairs.sort(key=board_key)
    return DutchPairing(
        boards=tuple(seat_pair(a, b) for a, b in pairs), bye=bye, unpaired=tuple(unpaired)
    )
