"""A ladder's rating settings: Elo or Glicko-2, a tagged choice read strictly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from service.ratings.elo import EloSettings
from service.ratings.glicko2 import Glicko2Settings

RatingSystem: TypeAlias = Literal["elo", "glicko2"]

RatingSettings: TypeAlias = EloSettings | Glicko2Settings
"""Tagged by ``system`` ("elo" when the JSON has none: ladders made before Glicko-2)."""

SYSTEMS: dict[str, type[EloSettings] | type[Glicko2Settings]] = {
    "elo": EloSettings,
    "glicko2": Glicko2Settings,
}


def settings_from_json(raw: Mapping[str, Any] | bytes | str | None) -> RatingSettings:
    """The ladder's ``rating`` JSON; missing keys take the defaults, an unknown key
    or a value out of range raises ``msgspec.ValidationError`` naming it."""
    if raw is None:
        return EloSettings()
    if isinstance(raw, bytes | str):
        raw = msgspec.json.decode(raw)
    if not isinstance(raw, Mapping):
        raise msgspec.ValidationError("The rating settings must be an object.")
    system = raw.get("system", "elo")
    kind = SYSTEMS.get(system) if isinstance(system, str) else None
    if kind is None:
        raise msgspec.ValidationError(
            f"Unknown rating system {system!r} (known: {', '.join(SYSTEMS)}) - at `$.system`"
        )
    found: RatingSettings = msgspec.convert(dict(raw), kind)
    return found
