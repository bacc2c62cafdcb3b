"""Metrics and log context for match commands, without touching the parts' code.

Registered in ``service.app.ON_STARTUP``: once the lifespan has put the match
core on ``app.state``, the core is given its observers (``observe``: every
command counted and timed by kind and outcome, its match in the log context
of its lines; ``after_append``: every append counts the events it wrote and
every lost race counts as a version conflict). The parts themselves therefore
need not call ``observe_command``, ``events_appended`` or ``version_conflicts``.
"""

from __future__ import annotations

from typing import Any

from service.ops import metrics
from service.ops.logging import set_match_id


def observe(match_id: str, actor: str, kind: str, seconds: float, outcome: str) -> None:
    """The match core's observer: the match in the log context of the command, and its
    metrics (the API names the player in the context as soon as it knows them)."""
    set_match_id(match_id)
    metrics.observe_command(kind, seconds, outcome)


def count_append(events: int, lost: bool) -> None:
    """The match core's after-append observer."""
    if lost:
        metrics.version_conflicts.inc()
    elif events:
        metrics.events_appended.inc(events)


def instrument_app(app: Any) -> None:
    """Observe ``app.state.matches`` (once)."""
    matches = getattr(app.state, "matches", None)
    if matches is None:
        return
    matches.observe = observe
    if count_append not in matches.after_append:
        matches.after_append.append(count_append)
