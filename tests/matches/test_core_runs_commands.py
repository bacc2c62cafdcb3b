"""The pipeline itself: a seat's command is folded, decided and appended at the
next version, or refused with the log unchanged."""

from __future__ import annotations

import pytest
from core_script import Clock, Table, as_player

from schemas.commands import Pass
from schemas.events import MatchCreated
from service.errors import Forbidden, NotFound, RuleError
from service.matches import MatchCore

pytestmark = pytest.mark.anyio


async def test_given_a_new_match_when_it_starts_then_it_is_created_and_dealt_at_version_two(
    table: Table,
) -> None:
    match_id = await table.start()

    rows = await table.core.store.load(match_id)
    assert [r.type for r in rows] == ["match_created", "hand_dealt"]
    created = rows[0].event
    assert isinstance(created, MatchCreated) and created.players == ("ann", "bo")
    assert (await table.core.current(match_id)).version == 2


async def test_given_a_started_match_when_the_seat_to_move_plays_then_its_events_follow(
    table: Table,
) -> None:
    await table.start()
    command = await table.legal()

    accepted = await table.play(command)

    rows = await table.core.store.load(table.match_id)
    assert accepted.version == len(rows) > 2
    assert [r.version for r in accepted.stored] == list(range(3, accepted.version + 1))
    assert [r.event for r in accepted.stored] == [r.event for r in rows[2:]]
    assert accepted.folded.version == accepted.version and not accepted.replayed


async def test_given_a_started_match_when_every_event_of_a_command_is_recorded_then_at_its_instant(
    table: Table, clock: Clock
) -> None:
    await table.start()
    clock.advance(7.5)

    accepted = await table.play()

    assert {r.recorded_at for r in accepted.stored} == {clock.at}


async def test_given_a_started_match_when_a_stranger_sends_a_command_then_it_is_forbidden(
    table: Table,
) -> None:
    await table.start()
    command = await table.legal()
    before = await table.version()

    with pytest.raises(Forbidden):
        await table.core.run(table.match_id, as_player("cy", command), actor="cy")

    assert await table.version() == before


async def test_given_a_started_match_when_the_seat_not_on_turn_plays_then_the_rules_refuse_it(
    table: Table,
) -> None:
    await table.start()
    mover = await table.mover()
    waiting = 1 - mover
    before = await table.version()

    with pytest.raises(RuleError) as refused:
        await table.play(Pass(seat=waiting))  # type: ignore[arg-type]

    assert refused.value.code == "not_your_turn"
    assert await table.version() == before


async def test_given_no_such_match_when_a_command_is_run_then_it_is_not_found(
    core: MatchCore,
) -> None:
    with pytest.raises(NotFound):
        await core.run("no-such-match", as_player("ann", Pass(seat=0)), actor="ann")
