"""Settings of bot play, read from the environment once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else raw.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, kw_only=True)
class BotPlaySettings:
    bots: bool = field(default_factory=lambda: _flag("MATCHA_BOTS", True))
    """Practice matches against the bots (and the bots' moves)."""
    move_delay_ms: int = field(default_factory=lambda: _int("MATCHA_BOT_MOVE_DELAY_MS", 400))
    """A pause before each bot move, so a player sees their own move land first."""
    thinkers: int = field(default_factory=lambda: _int("MATCHA_BOT_THINKERS", 1))
    """Searches running at once per API process (each in a thread, one core at most)."""
    max_matches: int = field(default_factory=lambda: _int("MATCHA_BOT_MAX_MATCHES", 500))
    """Practice matches one process drives at once; more wait for the sweep."""
    live_practice_per_player: int = field(
        default_factory=lambda: _int("MATCHA_PRACTICE_PER_PLAYER", 5)
    )
    """Unfinished practice matches a player may have at once."""
    sweep_s: int = field(default_factory=lambda: _int("MATCHA_BOT_SWEEP_S", 30))
    """How often a process looks for practice matches whose bot has not moved."""
    odds: bool = field(default_factory=lambda: _flag("MATCHA_WINPROB", True))
    """The spectators' win probability after each event."""
    odds_playouts: int = field(default_factory=lambda: _int("MATCHA_WINPROB_PLAYOUTS", 200))
    odds_max_ms: int = field(default_factory=lambda: _int("MATCHA_WINPROB_MAX_MS", 100))
    """CPU time ceiling of one estimate (0: none)."""
    odds_watch_s: int = field(default_factory=lambda: _int("MATCHA_WINPROB_WATCH_S", 600))
    """A match is estimated after each event for this long after somebody asked its odds."""
    odds_ttl_s: int = field(default_factory=lambda: _int("MATCHA_WINPROB_TTL_S", 30 * 86400))
    """How long a match's estimates stay in Redis after its last one."""


def load() -> BotPlaySettings:
    return BotPlaySettings()
