"""A player's dispute and an administrator's decision or annulment: commands that
are not a seat's, through the same pipeline (``MatchCore.run``); the engine
judges each (the dispute window, one pending dispute per seat, a reason)."""

from __future__ import annotations

from schemas.commands import AnnulMatch, Command, DecideDispute, FileDispute
from schemas.receipts import Receipt
from service.errors import Forbidden, NotFound
from service.matches.core import Accepted, MatchCore, new_id
from service.matches.facts import MatchFacts
from service.matches.folds import Folded


async def file_dispute(
    core: MatchCore,
    match_id: str,
    player_id: str,
    reason: str,
    receipts: tuple[Receipt, ...] = (),
) -> Accepted:
    """A player of a finished match disputes it, with the receipts they hold as
    evidence; the engine judges the window."""
    dispute_id = new_id()

    def make(facts: MatchFacts, _: Folded) -> Command:
        seat = facts.seat_of(player_id)
        if seat is None:
            raise Forbidden("Only the two players of this match may dispute it.")
        return FileDispute(
            dispute_id=dispute_id, seat=seat, player=player_id, reason=reason, receipts=receipts
        )

    return await core.run(match_id, make, actor=player_id)


async def decide_dispute(
    core: MatchCore, dispute_id: str, admin_id: str, *, upheld: bool, reason: str
) -> Accepted:
    """Uphold (the match is annulled) or reject a dispute, with a written reason."""
    match_id = await core.store.dispute_match(dispute_id)
    if match_id is None:
        raise NotFound("No dispute has this id.", code="dispute_not_found")
    command = DecideDispute(dispute_id=dispute_id, upheld=upheld, admin=admin_id, reason=reason)
    return await core.run(match_id, lambda _f, _s: command, actor=admin_id)


async def annul(core: MatchCore, match_id: str, admin_id: str, reason: str) -> Accepted:
    """Annul a match without a dispute, during play or after its end."""
    command = AnnulMatch(admin=admin_id, reason=reason)
    return await core.run(match_id, lambda _f, _s: command, actor=admin_id)
