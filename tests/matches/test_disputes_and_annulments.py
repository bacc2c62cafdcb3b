"""A player's dispute and an administrator's decision or annulment take the same
pipeline as a seat's move: decided by the engine, appended once, refused with
the log unchanged."""

from __future__ import annotations

import pytest
from core_script import Clock, Table

from schemas.events import DisputeDecided, DisputeFiled, MatchAnnulled
from service.errors import Forbidden, NotFound, RuleError
from service.matches.disputes import annul, decide_dispute, file_dispute

pytestmark = pytest.mark.anyio


async def test_given_an_ended_match_when_a_player_disputes_then_the_dispute_is_filed(
    table: Table,
) -> None:
    await table.start()
    await table.resign(0)

    accepted = await file_dispute(table.core, table.match_id, "ann", "My opponent saw my hand.")

    filed = accepted.stored[-1].event
    assert isinstance(filed, DisputeFiled)
    assert (filed.player, filed.seat, filed.reason) == ("ann", 0, "My opponent saw my hand.")
    assert await table.core.store.dispute_match(filed.dispute_id) == table.match_id


async def test_given_an_ended_match_when_a_stranger_disputes_then_it_is_forbidden(
    table: Table,
) -> None:
    await table.start()
    await table.resign(0)
    before = await table.version()

    with pytest.raises(Forbidden):
        await file_dispute(table.core, table.match_id, "cy", "I was not even playing.")

    assert await table.version() == before


async def test_given_a_match_in_play_when_a_player_disputes_then_the_rules_refuse_it(
    table: Table,
) -> None:
    await table.start()
    before = await table.version()

    with pytest.raises(RuleError) as refused:
        await file_dispute(table.core, table.match_id, "ann", "Too early.")

    assert refused.value.code == "match_not_finished"
    assert await table.version() == before


async def test_given_the_window_closed_when_a_player_disputes_then_the_rules_refuse_it(
    table: Table, clock: Clock
) -> None:
    await table.start()
    await table.resign(0)
    clock.advance(86_400 + 1)  # the default terms' dispute window

    with pytest.raises(RuleError) as refused:
        await file_dispute(table.core, table.match_id, "ann", "Too late.")

    assert refused.value.code == "dispute_window_closed"


async def test_given_a_filed_dispute_when_an_admin_upholds_it_then_the_match_is_annulled(
    table: Table,
) -> None:
    await table.start()
    await table.resign(0)
    filed = (await file_dispute(table.core, table.match_id, "ann", "Misdeal.")).stored[-1].event
    assert isinstance(filed, DisputeFiled)

    decided = await decide_dispute(
        table.core, filed.dispute_id, "admin-1", upheld=True, reason="The deal was wrong."
    )

    types = [type(r.event) for r in decided.stored]
    assert types == [DisputeDecided, MatchAnnulled]
    assert (await table.state()).annulled
    with pytest.raises(RuleError) as again:
        await decide_dispute(table.core, filed.dispute_id, "admin-1", upheld=False, reason="No.")
    assert again.value.code == "dispute_decided"


async def test_given_no_such_dispute_when_an_admin_decides_it_then_it_is_not_found(
    table: Table,
) -> None:
    with pytest.raises(NotFound) as refused:
        await decide_dispute(table.core, "no-such-dispute", "admin-1", upheld=True, reason="?")

    assert refused.value.code == "dispute_not_found"


async def test_given_a_match_in_play_when_an_admin_annuls_it_then_no_more_moves_are_taken(
    table: Table,
) -> None:
    await table.start()
    await table.play()
    command = await table.legal()

    annulled = await annul(table.core, table.match_id, "admin-1", "Collusion found.")
    after = await table.version()

    assert isinstance(annulled.stored[-1].event, MatchAnnulled)
    with pytest.raises(RuleError) as refused:
        await table.play(command)
    assert refused.value.code == "match_annulled"
    assert await table.version() == after


async def test_given_an_annulment_without_a_reason_when_an_admin_sends_it_then_refused(
    table: Table,
) -> None:
    await table.start()
    before = await table.version()

    with pytest.raises(RuleError) as refused:
        await annul(table.core, table.match_id, "admin-1", "   ")

    assert refused.value.code == "reason_required"
    assert await table.version() == before
