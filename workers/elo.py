"""Moved to ``service.ratings.elo`` (beside ``service.ratings.glicko2``); this
name stays for the code that imports it."""

from service.ratings.elo import *  # noqa: F403
from service.ratings.elo import DEFAULT_SETTINGS, EloRatings, EloSettings, recompute

__all__ = ["DEFAULT_SETTINGS", "EloRatings", "EloSettings", "recompute"]
