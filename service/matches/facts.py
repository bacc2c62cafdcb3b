"""What never changes about a match once it is created: how it began and the
terms it is played on. The viewer policy and the engine's dispute rule read them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from schemas.cards import Seat
from schemas.events import MatchCreated
from schemas.rules import DEFAULT_TERMS, MatchTerms

LadderTerms = Callable[[str], Awaitable[MatchTerms]]
"""``await terms(ladder_id)``: a ladder's terms, read from its row. Only for
matches created before terms were copied into ``MatchCreated``."""


class MatchFacts(msgspec.Struct, frozen=True, kw_only=True):
    created: MatchCreated
    terms: MatchTerms

    @property
    def match_id(self) -> str:
        return self.created.match_id

    @property
    def players(self) -> tuple[str, str]:
        return self.created.players

    @property
    def ladder_id(self) -> str | None:
        return self.created.ladder_id

    def seat_of(self, player_id: str | None) -> Seat | None:
        """The seat ``player_id`` plays in this match, if any."""
        if player_id is None:
            return None
        if self.created.players[0] == player_id:
            return 0
        if self.created.players[1] == player_id:
            return 1
        return None


async def facts_of(created: MatchCreated, ladder_terms: LadderTerms | None) -> MatchFacts:
    """The facts of a match from its first event (and, for an old match, its ladder's row)."""
    terms = created.terms or None
    if terms is None:
        if created.ladder_id is not None and ladder_terms is not None:
            terms = await ladder_terms(created.ladder_id)
        else:
            terms = DEFAULT_TERMS
    return MatchFacts(created=created, terms=terms)
