"""Metrics and log context for match commands, without touching the API's code.

Registered in `service.api.app.ON_STARTUP`: once the lifespan has put the
match service and the event store on `app.state`, their `handle` and `append`
are wrapped (on those instances only) so that every command is counted and
timed by kind and outcome, every append counts its events, every lost race
counts as a version conflict, and every log line of a command carries its
match and player. The parts themselves therefore need not call
`observe_command`, `events_appended` or `version_conflicts`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from service.errors import MatchaError, VersionConflict
from service.ops import metrics
from service.ops.logging import set_match_id, set_player

_MARK = "_matcha_instrumented"


def command_kind(body: object) -> str:
    """`PlayBody` -> `play`: the command's name, as the route says it."""
    name = type(body).__name__
    return (name[: -len("Body")] if name.endswith("Body") else name).lower()


def _wrap_handle(handle: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(handle)
    async def timed(match_id: str, player: Any, command_body: Any, *rest: Any, **kw: Any) -> Any:
        set_match_id(match_id)
        set_player(getattr(player, "name", None) or getattr(player, "id", None))
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await handle(match_id, player, command_body, *rest, **kw)
            outcome = "ok"
            return result
        except MatchaError as refused:
            outcome = refused.code
            raise
        finally:
            seconds = time.perf_counter() - started
            metrics.observe_command(command_kind(command_body), seconds, outcome)

    setattr(timed, _MARK, True)
    return timed


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
    """Wrap `app.state.matches.handle` and `app.state.store.append` (once each)."""
    state = app.state
    store = getattr(state, "store", None)
    if store is not None and not getattr(store.append, _MARK, False):
        store.append = _wrap_append(store.append)
    matches = getattr(state, "matches", None)
    if matches is not None and not getattr(matches.handle, _MARK, False):
        matches.handle = _wrap_handle(matches.handle)
