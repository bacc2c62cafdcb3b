"""Tournaments: a second event-sourced aggregate beside matches (docs/tournaments.md).

The engine is pure (``decide``, ``evolve``, ``fold``, ``initial_state``,
``is_terminal``; pairing in ``swiss``, ``berger``, ``arena``; ``tiebreaks``
and ``standings`` read the state). The shell around it: ``store`` (the
``tournament_events`` stream), ``projection`` (standings, games, crosstable
tables), ``service`` (one command, one transaction), ``runner`` (results from
the match log, the clock, match creation), ``match_adapter`` (the one door to
the match core), ``routes`` and ``live`` (HTTP, SSE, WebSocket), ``plugin``
(start-up), ``simulate`` and ``cli`` (``matcha tournament``).
"""

from service.tournaments.decide import decide, match_id_for, step
from service.tournaments.evolve import evolve, fold
from service.tournaments.standings import lines, standings
from service.tournaments.state import TournamentState, initial_state, is_terminal

__all__ = [
    "TournamentState",
    "decide",
    "evolve",
    "fold",
    "initial_state",
    "is_terminal",
    "lines",
    "match_id_for",
    "standings",
    "step",
]
