"""Tuning of the tournament runner and live standings, read from the environment once."""

import os
from dataclasses import dataclass, field


def _float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else raw.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, kw_only=True)
class TournamentSettings:
    runner: bool = field(default_factory=lambda: _flag("MATCHA_TOURNAMENT_RUNNER", True))
    """Run the results runner and the tournament clock in this API process
    (several processes may: one at a time holds the runner's row)."""
    poll_s: float = field(default_factory=lambda: _float("MATCHA_TOURNAMENT_POLL_S", 2.0))
    """The runner looks at the log this often even with no hint: the most a
    lost hint delays a result, a pairing or an arena's end."""
    live_check_s: float = field(
        default_factory=lambda: _float("MATCHA_TOURNAMENT_LIVE_CHECK_S", 5.0)
    )
    """A standings stream compares its tournament's version with the table
    this often without a hint."""
