"""The search bot's levels, and bots by name for self-play and the console.

A level is a playout budget (reproducible: the same view and seed give the
same move) with a ceiling of CPU time that only a slow or overloaded machine
reaches (then the move is the best found so far). Against ``heuristic_bot``
on the shared 2-core machine (standard; duel in docs/bots.md): ``beginner``
57 %, ``casual`` 69 %, ``strong`` 83 %, ``master`` 91 %.

``bot_named`` turns a name into a ``Bot`` (``(board, seat, rng) -> command``)
for ``play_match``: ``random``, ``heuristic``, a level, or ``search:<N>`` (N
playouts, no ceiling). The search levels get the seat's *view* of the board,
built here by the referee's observer (``service.engine.view``), never the board.
"""

from __future__ import annotations

import random
from typing import Final

import msgspec

from schemas.cards import Seat
from schemas.commands import SeatCommand
from service.bots.search import Budget, search
from service.bots.simple import BOTS, Bot
from service.engine import State, view
from service.engine.state import Board, freeze


class Level(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    budget: Budget
    description: str


LEVELS: Final[dict[str, Level]] = {
    level.name: level
    for level in (
        Level(
            name="beginner",
            budget=Budget(playouts=5, max_ms=250),
            description="5 playouts a move: sees the obvious, misses the rest",
        ),
        Level(
            name="casual",
            budget=Budget(playouts=15, max_ms=250),
            description="15 playouts a move: a steady club player",
        ),
        Level(
            name="strong",
            budget=Budget(playouts=60, max_ms=45),
            description="60 playouts a move (about 20 ms, never more than 45)",
        ),
        Level(
            name="master",
            budget=Budget(playouts=400, max_ms=2000),
            description="400 playouts a move (about 0.15 s, at most 2 s)",
        ),
    )
}
"""From weakest to strongest (dict order)."""

BENCH_LEVEL: Final = "strong"
"""The level bench/bench_bots.py holds to <= 50 ms a move."""


def search_bot(budget: Budget) -> Bot:
    """A ``Bot`` that searches from the seat's view with ``budget``; its seed is
    drawn from the ``rng`` it is handed, so a self-play run is reproducible."""

    def bot(board: Board, seat: Seat, rng: random.Random) -> SeatCommand:
        state = board if isinstance(board, State) else freeze(board)
        return search(view(state, seat), budget, rng.getrandbits(64)).command

    bot.__name__ = f"search_{budget.playouts}"
    return bot


def bot_named(name: str) -> Bot:
    """``random``, ``heuristic``, a level name, or ``search:<playouts>``."""
    if name in BOTS:
        return BOTS[name]
    if name in LEVELS:
        return search_bot(LEVELS[name].budget)
    prefix, _, count = name.partition(":")
    if prefix == "search" and count.isdigit() and int(count) > 0:
        return search_bot(Budget(playouts=int(count)))
    known = ", ".join([*BOTS, *LEVELS, "search:<playouts>"])
    raise ValueError(f"Unknown bot {name!r}; the bots are {known}.")


BOT_NAMES: Final[tuple[str, ...]] = (*BOTS, *LEVELS)
