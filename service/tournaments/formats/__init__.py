"""Tournament formats as plug-ins: one module each, one ``FormatRules`` object each.

``rules_for(fmt)`` is the only place a format is looked up by its type; the
engine (``decide.py``) asks the rules and never tests the format itself.
"""

from __future__ import annotations

from typing import Final

from schemas.tournaments import Arena, Format, RoundRobin, Swiss
from service.tournaments.formats import arena, round_robin, swiss
from service.tournaments.formats.base import FormatRules, match_id_for

RULES: Final[dict[type, FormatRules]] = {
    Swiss: swiss.RULES,
    RoundRobin: round_robin.RULES,
    Arena: arena.RULES,
}


def rules_for(fmt: Format | None) -> FormatRules:
    if fmt is None:
        raise LookupError("the tournament has no format yet")
    return RULES[type(fmt)]


__all__ = ["RULES", "FormatRules", "match_id_for", "rules_for"]
