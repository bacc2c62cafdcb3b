"""The clock's command, through the same pipeline (``MatchCore.run``): a seat
ran out of time. The engine checks that it did, at the instant the core
stamps; the sweepers (``workers.clocks``) and a player's claim both ask here.
(A seat's own command that arrives late is refused and its time-out recorded
by the core itself.)"""

from __future__ import annotations

from schemas.cards import Seat
from schemas.commands import Command, TimeOut
from service.errors import Forbidden
from service.matches.core import Accepted, MatchCore
from service.matches.facts import MatchFacts
from service.matches.folds import Folded


async def time_out(
    core: MatchCore, match_id: str, seat: Seat, *, expected_version: int | None = None
) -> Accepted:
    """``seat`` ran out of time. ``expected_version``: the version the deadline was
    read at (the sweepers'): a second time-out of the same deadline is a
    ``VersionConflict``, never a second result."""
    command = TimeOut(seat=seat)
    return await core.run(
        match_id, lambda _f, _s: command, actor="system", expected_version=expected_version
    )


async def claim_time_out(core: MatchCore, match_id: str, player_id: str) -> Accepted:
    """A player claims the win: their opponent's clock ran out (lichess's "claim
    victory"). The engine refuses it if that clock has not run out."""

    def make(facts: MatchFacts, _: Folded) -> Command:
        seat = facts.seat_of(player_id)
        if seat is None:
            raise Forbidden("Only a player of this match may claim a time-out.")
        return TimeOut(seat=1 if seat == 0 else 0)

    return await core.run(match_id, make, actor=player_id)
