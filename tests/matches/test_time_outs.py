"""The clock's command through the core: a time-out is appended only once the
seat's time ran out, once per deadline; a seat's command that arrives late is
refused and the time-out it found is recorded."""

from __future__ import annotations

import pytest
from core_script import Clock, Table

from schemas.events import MatchEnded
from schemas.rules import MatchTerms, RealTime
from service.errors import Forbidden, RuleError, VersionConflict
from service.matches.clocks import claim_time_out, time_out

pytestmark = pytest.mark.anyio

TIMED = MatchTerms(clock=RealTime(base_s=60, no_show_s=30))


async def _both_moved(table: Table) -> None:
    """Play until each seat has made a move of its own (its main clock then runs)."""
    for _ in range(50):
        state = await table.state()
        if all(state.moved):
            return
        await table.play()
    raise AssertionError("a seat never moved")


async def test_given_a_timed_match_when_time_is_left_then_a_time_out_is_refused(
    table: Table,
) -> None:
    await table.start(terms=TIMED)
    mover = await table.mover()
    before = await table.version()

    with pytest.raises(RuleError) as refused:
        await time_out(table.core, table.match_id, mover)

    assert refused.value.code == "time_not_expired"
    assert await table.version() == before


async def test_given_a_seat_that_never_moved_when_its_no_show_time_runs_out_then_aborted(
    table: Table, clock: Clock
) -> None:
    await table.start(terms=TIMED)
    mover = await table.mover()
    clock.advance(31)

    accepted = await time_out(table.core, table.match_id, mover)

    ended = accepted.stored[-1].event
    assert isinstance(ended, MatchEnded)
    assert (ended.reason, ended.winner, ended.no_show) == ("aborted", None, mover)


async def test_given_a_run_out_clock_when_two_sweepers_time_it_out_then_it_is_recorded_once(
    table: Table, clock: Clock
) -> None:
    await table.start(terms=TIMED)
    await _both_moved(table)
    mover = await table.mover()
    deadline_version = await table.version()
    clock.advance(61)

    accepted = await time_out(table.core, table.match_id, mover, expected_version=deadline_version)
    with pytest.raises(VersionConflict):
        await time_out(table.core, table.match_id, mover, expected_version=deadline_version)

    ended = accepted.stored[-1].event
    assert isinstance(ended, MatchEnded)
    assert (ended.reason, ended.winner) == ("timeout", 1 - mover)
    assert await table.version() == accepted.version


async def test_given_a_run_out_clock_when_its_seat_moves_late_then_refused_and_timed_out(
    table: Table, clock: Clock
) -> None:
    await table.start(terms=TIMED)
    await _both_moved(table)
    late = await table.legal()
    clock.advance(61)

    with pytest.raises(RuleError) as refused:
        await table.play(late)

    assert refused.value.code == "time_expired"
    rows = await table.core.store.load(table.match_id)
    ended = [r.event for r in rows if isinstance(r.event, MatchEnded)]
    assert len(ended) == 1 and ended[0].reason == "timeout" and ended[0].winner == 1 - late.seat


async def test_given_a_run_out_clock_when_the_opponent_claims_then_the_time_out_is_recorded(
    table: Table, clock: Clock
) -> None:
    await table.start(terms=TIMED)
    await _both_moved(table)
    mover = await table.mover()
    clock.advance(61)

    with pytest.raises(Forbidden):
        await claim_time_out(table.core, table.match_id, "cy")
    accepted = await claim_time_out(table.core, table.match_id, ("ann", "bo")[1 - mover])

    ended = accepted.stored[-1].event
    assert isinstance(ended, MatchEnded) and ended.winner == 1 - mover
