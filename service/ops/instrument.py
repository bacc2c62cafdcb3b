"""Metrics and log context for match commands, without touching the API's code.

Registered in `service.app.ON_STARTUP`: once the lifespan has put the
match core and the event store on `app.state`, the core is given an observer
and the store's `append` is wrapped (on that instance only), so that every
command is counted and timed by kind and outcome, every append counts its
events, every lost race counts as a version conflict, and every log line of
a command carries its match. The parts
themselves therefore need not call `observe_command`, `events_appended` or
`version_conflicts`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from service.errors import VersionConflict
from service.ops import metrics
from service.ops.logging import set_match_id

_MARK = "_matcha_instrumented"


def observe(match_id: str, actor: str, kind: str, seconds: float, outcome: str) -> None:
    """The match core's observer: the match in the log context of the command, and its
    metrics (the API names the player in the context as soon as it knows them)."""
    set_match_id(match_id)
    metrics.observe_command(kind, seconds, outcome)


def _wrap_append(append: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(append)
    async def counted(match_id: str, expected: int, events: Any, *rest: Any, **kw: Any) -> Any:
        try:
            result = await append(match_id, expected, events, *rest, **kw)
        except VersionConflict:
            metrics.version_conflicts.inc()
            raise
        if not getattr(result, "replayed", False):
            metrics.events_appended.inc(len(events))
        return result

    setattr(counted, _MARK, True)
    return counted


def instrument_app(app: Any) -> None:
    """Observe `app.state.matches` and wrap `app.state.store.append` (once)."""
    state = app.state
    store = getattr(state, "store", None)
    if store is not None and not getattr(store.append, _MARK, False):
        store.append = _wrap_append(store.append)
    matches = getattr(state, "matches", None)
    if matches is not None:
        matches.observe = observe
