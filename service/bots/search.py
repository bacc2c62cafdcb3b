"""The search bot: Information Set Monte Carlo Tree Search (MO-ISMCTS).

Cowling, Powley and Whitehouse, "Information Set Monte Carlo Tree Search"
(IEEE TCIAIG 4(2), 2012), the multiple-observer variant: one tree per seat,
each keyed by what *that seat* observes. Every iteration

1. draws a determinization from the bot's information set
   (``service.bots.determinize``: the cards it cannot see, dealt uniformly
   into the places they must be; future deals from a fresh seed);
2. descends both trees together: the seat to move picks among the moves
   legal in this determinization by UCB1 in its own tree, counting how often
   each was *available* (the subset-armed bandit of the paper: which moves
   exist depends on the hidden cards); then each tree follows the move as
   its seat observes it: the mover sees its card, the other seat only the
   target (``service.bots.moves.observed``);
3. adds one node (the first untried move) and plays the match out with the
   playout policy (``service.bots.playout``) through the engine's own
   ``run``, so every simulated move is judged by the referee's rules;
4. gives each node on the path its mover's result (1 a win, 0.5 a draw, 0 a loss).

The move played is the most visited at the root. The search reads only the
view it is given: the functions here take a ``MatchView``, never a ``State``.
Given the same view, budget and seed it plays the same move, unless the CPU
time ceiling cut it short (``Budget.max_ms``).
"""

from __future__ import annotations

import math
import random
import time
from typing import Final

import msgspec

from schemas.cards import Seat
from schemas.commands import SeatCommand
from schemas.views import MatchView
from service.bots.determinize import sample_table
from service.bots.infoset import InfoSet, info_set
from service.bots.moves import legal, observed, to_move
from service.bots.playout import POLICIES, playout
from service.engine.decide import run


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """How much a search (or an estimate) may spend: ``playouts`` iterations,
    and at most ``max_ms`` milliseconds of CPU time (None: no ceiling).

    CPU time of the searching thread, not the wall clock: the ceiling bounds
    the work done, and a busy machine does not change where it falls, so a
    search that reaches its ceiling on one machine reaches it at about the
    same playout on another of the same speed."""

    playouts: int
    max_ms: float | None = None


class SearchSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The search's knobs (the defaults are what bench/bench_bots.py measured best)."""

    exploration: float = 0.7
    """UCB1's constant: rewards are in [0, 1]."""
    policy: str = "heuristic"
    """The playout policy, a key of ``service.bots.playout.POLICIES``."""


DEFAULT: Final = SearchSettings()


class SearchResult(msgspec.Struct, frozen=True, kw_only=True):
    command: SeatCommand
    playouts: int
    """Iterations run (each one determinization and one playout)."""
    elapsed_ms: float
    """CPU time spent."""
    value: float
    """The chosen move's mean result for the bot (0..1)."""


class _Node:
    """One node of a seat's tree: the statistics of the move that leads here."""

    __slots__ = ("avail", "children", "reward", "visits")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.reward = 0.0
        self.avail = 0


def _iterate(
    info: InfoSet,
    me: Seat,
    roots: tuple[_Node, _Node],
    rng: random.Random,
    settings: SearchSettings,
) -> None:
    t = sample_table(info, rng)
    policy = POLICIES[settings.policy]
    c = settings.exploration
    nodes = [roots[0], roots[1]]
    path: list[tuple[Seat, _Node]] = []
    seat: Seat | None = me  # the bot decides first (between hands: its secret choice first)
    while seat is not None:
        codes, commands = legal(t, seat)
        node = nodes[seat]
        children = node.children
        untried: list[int] = []
        for code in codes:
            child = children.get(code)
            if child is None:
                untried.append(code)
            else:
                child.avail += 1
        if untried:
            code = untried[int(rng.random() * len(untried))]
            child = _Node()
            child.avail = 1
            children[code] = child
            run(t, commands[codes.index(code)])
            path.append((seat, child))
            break
        best = -1.0
        chosen = 0
        for k, code in enumerate(codes):
            child = children[code]
            score = child.reward / child.visits + c * math.sqrt(
                math.log(child.avail) / child.visits
            )
            if score > best:
                best = score
                chosen = k
        code = codes[chosen]
        child = children[code]
        run(t, commands[chosen])
        path.append((seat, child))
        nodes[seat] = child
        other = 1 - seat
        seen = observed(code)
        follow = nodes[other].children.get(seen)
        if follow is None:
            follow = _Node()
            nodes[other].children[seen] = follow
        nodes[other] = follow
        seat = to_move(t)
    winner = playout(t, policy, rng) if t.phase != "ended" else t.winner
    for mover, node in path:
        node.visits += 1
        node.reward += 0.5 if winner is None else float(winner == mover)


def search(
    view: MatchView, budget: Budget, seed: int, settings: SearchSettings = DEFAULT
) -> SearchResult:
    """The move the search bot plays from ``view`` (a seat's view with something to do)."""
    me = view.viewer
    if me != 0 and me != 1:
        raise ValueError("The search bot plays a seat: give it that seat's view.")
    if not view.legal_moves:
        raise ValueError(f"Seat {me} has nothing to do in this view.")
    info = info_set(view)
    started = time.thread_time()
    rng = random.Random(seed)
    roots = (_Node(), _Node())
    # The root's moves are the same in every determinization (the bot's own hand).
    codes, commands = legal(sample_table(info, random.Random(0)), me)
    done = 0
    if len(codes) > 1:
        deadline = None if budget.max_ms is None else started + budget.max_ms / 1000
        while done < budget.playouts:
            _iterate(info, me, roots, rng, settings)
            done += 1
            if deadline is not None and time.thread_time() > deadline:
                break
    children = roots[me].children

    def rank(k: int) -> tuple[int, float]:
        node = children.get(codes[k])
        if node is None or not node.visits:
            return (0, 0.0)
        return (node.visits, node.reward / node.visits)

    best = max(range(len(codes)), key=rank)
    chosen = children.get(codes[best])
    return SearchResult(
        command=commands[best],
        playouts=done,
        elapsed_ms=(time.thread_time() - started) * 1000,
        value=0.5 if chosen is None or not chosen.visits else chosen.reward / chosen.visits,
    )
