"""The rules engine of Matcha: pure functions, no I/O, no clock, no global random.

``decide(state, command) -> events`` and ``evolve(state, event) -> state``,
folded from ``initial_state()``. Where each rule lives: docs/rules-engine.md.
"""

from schemas.views import Phase
from service.engine.dealing import check_deals, commitment, deal
from service.engine.decide import decide, step, time_out
from service.engine.evolve import evolve, fold
from service.engine.redact import Viewer, redact, view
from service.engine.state import State, initial_state, is_terminal
from service.engine.turns import legal_moves

__all__ = [
    "Phase",
    "State",
    "Viewer",
    "check_deals",
    "commitment",
    "deal",
    "decide",
    "evolve",
    "fold",
    "initial_state",
    "is_terminal",
    "legal_moves",
    "redact",
    "step",
    "time_out",
    "view",
]
