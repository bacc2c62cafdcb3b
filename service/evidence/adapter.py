"""The one place this part calls the match core (CONTRACTS.md 4): the lead
re-points it here when ``service/matches.py`` becomes ``service/matches/``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def on_every_commit(app: Any, hook: Callable[[str, list[Any]], Any]) -> None:
    """Run ``await hook(match_id, stored_events)`` after each committed command."""
    app.state.matches.after_commit.append(hook)
