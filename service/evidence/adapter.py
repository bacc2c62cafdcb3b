"""The one place this part calls the match core: its after-commit hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from service.matches import Committed


def on_every_commit(app: Any, hook: Callable[[str, list[Any]], Awaitable[None]]) -> None:
    """Run ``await hook(match_id, stored_events)`` after each committed command."""

    async def after_commit(committed: Committed) -> None:
        await hook(committed.match_id, list(committed.stored))

    app.state.matches.after_commit.append(after_commit)
