"""Each seat's chance to win, from a view alone: the spectators' bar.

Perfect Information Monte Carlo (as Ginsberg's GIB did for bridge): draw
positions the viewer cannot tell from the real one
(``service.bots.determinize``), play each to its end with the playout policy
through the engine's own rules (``service.bots.playout``), and count who won.
A spectator's view hides both hands, every face-down card not yet revealed,
the lone cards, the kept cards and the two set aside, so the estimate knows
no more than any spectator does: ``estimate_for_spectators`` refuses any
other view.

The seed of the draws comes from the view itself (its match id and version),
so one view always gets one answer: the bar never flickers between two
spectators, or two API processes, at one version.
"""

from __future__ import annotations

import hashlib
import random
import time
from typing import Final

import msgspec

from schemas.commands import StartMatch
from schemas.views import MatchView
from service.bots.determinize import sample_table
from service.bots.infoset import info_set
from service.bots.playout import POLICIES, playout
from service.bots.search import Budget
from service.engine.decide import run, settle
from service.engine.state import Table


class WinProbability(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    """The match version the estimate is for."""
    p: tuple[float, float]
    """Each seat's chance to win; ``1 - p0 - p1`` is the chance of a draw."""
    playouts: int
    """Positions played out (0: the match is over and ``p`` is its result)."""
    elapsed_ms: float
    """CPU time spent."""


SPECTATOR_BUDGET: Final = Budget(playouts=200, max_ms=100)
"""Per update: 200 playouts (a standard error of at most 3.5 points on each p),
about 50 ms of CPU; never more than 100 ms."""


def view_seed(view: MatchView) -> int:
    """The draws' seed for a view: the same view, the same estimate."""
    digest = hashlib.sha256(f"winprob:{view.match_id}:{view.version}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def estimate(
    view: MatchView, budget: Budget, seed: int, policy: str = "heuristic"
) -> WinProbability:
    """Each seat's chance to win as ``view``'s viewer can tell it."""
    started = time.thread_time()
    result = view.result
    if result is not None:
        winner = None if result.annulled else result.winner
        return WinProbability(
            version=view.version,
            p=(float(winner == 0), float(winner == 1)),
            playouts=0,
            elapsed_ms=(time.thread_time() - started) * 1000,
        )
    rng = random.Random(seed)
    play = POLICIES[policy]
    deadline = None if budget.max_ms is None else started + budget.max_ms / 1000
    dealt = view.phase != "new"
    info = info_set(view) if dealt else None
    wins = [0, 0]
    done = 0
    while done < budget.playouts:
        table = sample_table(info, rng) if info is not None else _before_the_deal(view, rng)
        # A replay's frame may stand inside one command's events (an automatic pass
        # before its reveal): the engine's own next steps first, then the playout.
        settle(table)
        winner = playout(table, play, rng)
        if winner is not None:
            wins[winner] += 1
        done += 1
        if deadline is not None and time.thread_time() > deadline:
            break
    p = (wins[0] / done, wins[1] / done)
    if not dealt:  # nothing tells the seats apart yet (the first dealer is not shown)
        p = ((p[0] + p[1]) / 2, (p[0] + p[1]) / 2)
    return WinProbability(
        version=view.version,
        p=p,
        playouts=done,
        elapsed_ms=(time.thread_time() - started) * 1000,
    )


def _before_the_deal(view: MatchView, rng: random.Random) -> Table:
    """A match of the view's ruleset dealt from a fresh seed (the real one is secret)."""
    t = Table()
    start = StartMatch(
        match_id=view.match_id,
        players=(view.seats[0].player, view.seats[1].player),
        ruleset=view.ruleset,
        first_dealer=rng.choice((0, 1)),
        seed=rng.getrandbits(256).to_bytes(32, "big").hex(),
    )
    run(t, start)
    return t


def estimate_for_spectators(
    view: MatchView, budget: Budget = SPECTATOR_BUDGET
) -> tuple[float, float]:
    """(p0, p1) from a live spectator's view, and from nothing else.

    Raises ``ValueError`` for any other viewer's view: a seat's view would put
    that seat's hand into a number every spectator sees.
    """
    if view.viewer != "spectator":
        raise ValueError("The spectators' estimate is computed from a spectator's view only.")
    return estimate(view, budget, view_seed(view)).p
