"""Moved to ``workers.ratings.elo`` (beside ``workers.ratings.glicko2``); this
name stays for the code that imports it."""

from workers.ratings.elo import *  # noqa: F403
from workers.ratings.elo import DEFAULT_SETTINGS, EloRatings, EloSettings, recompute

__all__ = ["DEFAULT_SETTINGS", "EloRatings", "EloSettings", "recompute"]
