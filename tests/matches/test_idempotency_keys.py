"""An idempotency key promises one result: a resend gets the first answer and
appends nothing, whatever happened in between; a key reused for another
request is refused."""

from __future__ import annotations

import pytest
from core_script import PLAYERS, Clock, Table, one_match_two_cores

from schemas.commands import Pass, Resign
from service.errors import Conflict
from service.matches import MatchCore
from service.store import EventStore

pytestmark = pytest.mark.anyio


async def test_given_an_accepted_command_when_it_is_resent_with_its_key_then_the_first_answer(
    table: Table,
) -> None:
    await table.start()
    command = await table.legal()
    first = await table.play(command, idempotency_key="k-1")

    again = await table.play(command, idempotency_key="k-1")

    assert again.replayed and not first.replayed
    assert again.version == first.version == await table.version()
    assert again.folded.state == first.folded.state
    assert [r.hash for r in again.stored] == [first.stored[-1].hash]


async def test_given_the_match_moved_on_when_an_old_command_is_resent_then_the_first_answer(
    table: Table,
) -> None:
    await table.start()
    command = await table.legal()
    first = await table.play(command, idempotency_key="k-1")
    await table.play()  # the next move: the resent one would now be refused by the rules
    moved_to = await table.version()

    again = await table.play(command, idempotency_key="k-1")

    assert again.replayed and again.version == first.version
    assert again.folded.state == first.folded.state
    assert await table.version() == moved_to


async def test_given_a_used_key_when_it_comes_with_another_command_then_it_is_refused(
    table: Table,
) -> None:
    await table.start()
    command = await table.legal()
    await table.play(command, idempotency_key="k-1")
    before = await table.version()

    with pytest.raises(Conflict) as refused:
        await table.play(Resign(seat=command.seat), idempotency_key="k-1")

    assert refused.value.code == "idempotency_key_reused"
    assert await table.version() == before


async def test_given_a_created_match_when_the_create_is_resent_with_its_key_then_the_same_match(
    core: MatchCore,
) -> None:
    first = await core.start(players=PLAYERS, ruleset="duel", ladder_id=None, idempotency_key="c")

    again = await core.start(players=PLAYERS, ruleset="duel", ladder_id=None, idempotency_key="c")

    assert again.match_id == first.match_id
    assert await core.store.version(first.match_id) == 2


async def test_given_a_create_key_when_it_comes_with_other_rules_then_it_is_refused(
    core: MatchCore,
) -> None:
    await core.start(players=PLAYERS, ruleset="duel", ladder_id=None, idempotency_key="c")

    with pytest.raises(Conflict) as refused:
        await core.start(players=PLAYERS, ruleset="standard", ladder_id=None, idempotency_key="c")

    assert refused.value.code == "idempotency_key_reused"


async def test_given_a_key_used_when_a_refused_command_reuses_it_then_it_is_refused_as_reused(
    table: Table,
) -> None:
    await table.start()
    command = await table.legal()
    await table.play(command, idempotency_key="k-1")
    waiting = 1 - await table.mover()
    before = await table.version()

    with pytest.raises(Conflict) as refused:  # not the first answer: another request
        await table.play(Pass(seat=waiting), idempotency_key="k-1")  # type: ignore[arg-type]

    assert refused.value.code == "idempotency_key_reused"
    assert await table.version() == before


async def test_given_a_key_used_on_one_match_when_it_comes_for_another_then_it_is_refused(
    core: MatchCore,
) -> None:
    first, second = Table(core), Table(core)
    await first.start()
    await second.start()
    await first.play(Resign(seat=0), idempotency_key="k-1")  # keys are per actor: ann's

    with pytest.raises(Conflict) as refused:
        await second.play(Resign(seat=0), idempotency_key="k-1")

    assert refused.value.code == "idempotency_key_reused"


async def test_given_another_core_took_the_command_when_a_stale_core_gets_the_resend_then_replayed(
    store: EventStore, clock: Clock
) -> None:
    stale, fresh = await one_match_two_cores(store, clock)
    command = await stale.legal()  # this core has folded the match at version 2
    first = await fresh.play(command, idempotency_key="k-1")

    again = await stale.play(command, idempotency_key="k-1")

    assert again.replayed and again.version == first.version
    assert again.folded.state == first.folded.state
    assert await stale.version() == first.version
