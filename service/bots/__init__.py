"""Bots that play Matcha, and the spectators' estimate of who will win (docs/bots.md).

* ``random_bot``, ``heuristic_bot`` (``simple``): fast, for tests and
  self-play; they read a ``State`` or the engine's ``Table``.
* ``search`` (``search``): the search bot, Information Set MCTS from a seat's
  ``MatchView``; its levels and bots by name in ``levels``.
* ``estimate_for_spectators`` (``winprob``): each seat's chance to win from a
  spectator's ``MatchView``.

How they see the match: ``infoset`` (what a view tells) and ``determinize``
(positions consistent with it); how they simulate: ``playout``, through the
engine's own ``decide.run``. ``arena`` and ``cli`` pit bots against each other.
"""

from service.bots.levels import LEVELS, Level, bot_named, search_bot
from service.bots.search import Budget, SearchResult, search
from service.bots.simple import BOTS, Bot, NothingToDo, heuristic_bot, random_bot
from service.bots.winprob import WinProbability, estimate, estimate_for_spectators

__all__ = [
    "BOTS",
    "LEVELS",
    "Bot",
    "Budget",
    "Level",
    "NothingToDo",
    "SearchResult",
    "WinProbability",
    "bot_named",
    "estimate",
    "estimate_for_spectators",
    "heuristic_bot",
    "random_bot",
    "search",
    "search_bot",
]
