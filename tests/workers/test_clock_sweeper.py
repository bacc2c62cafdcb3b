"""The clock sweeper over a real database, with an injected clock (no sleeps):
deadlines are kept with the appends, and each time-out is appended exactly once
however many sweepers race, and even when one dies holding its claim."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from psycopg_pool import AsyncConnectionPool

from schemas.commands import Pass
from schemas.events import MatchEnded
from schemas.rules import MatchTerms, RealTime
from service.errors import RuleConflict
from service.matches import MatchCore
from service.store import EventStore
from workers.clocks import Sweeper

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CONTROL = RealTime(base_s=10, increment_s=1, no_show_s=5)


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


def core_with(store: EventStore, clock: Clock) -> MatchCore:
    core = MatchCore(store)
    core.now = clock
    return core


async def deadline_row(pool: AsyncConnectionPool, match_id: str) -> tuple[object, ...] | None:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT seat, due_at, version FROM match_deadlines WHERE match_id = %s", (match_id,)
        )
        return await cur.fetchone()


async def endings(store: EventStore, match_id: str) -> list[MatchEnded]:
    return [r.event for r in await store.load(match_id) if isinstance(r.event, MatchEnded)]


async def started(core: MatchCore) -> tuple[str, int]:
    match = await core.start(
        players=("p0", "p1"), ruleset="standard", ladder_id=None, terms=MatchTerms(clock=CONTROL)
    )
    folded = await core.current(match.match_id)
    assert folded.state.to_move is not None
    return match.match_id, folded.state.to_move


async def test_given_a_timed_match_its_next_deadline_is_written_with_every_append(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    clock = Clock()
    core = core_with(store, clock)
    match_id, seat = await started(core)
    assert await deadline_row(pool, match_id) == (seat, T0 + timedelta(seconds=5), 2)
    clock.at = T0 + timedelta(seconds=1)
    accepted = await core.run(match_id, lambda _f, _s: Pass(seat=seat), actor="p")
    row = await deadline_row(pool, match_id)
    assert row == (1 - seat, T0 + timedelta(seconds=6), accepted.version)


async def test_given_two_sweepers_racing_for_a_due_deadline_the_time_out_is_appended_once(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    clock = Clock()
    match_id, seat = await started(core_with(store, clock))
    clock.at = T0 + timedelta(seconds=4, milliseconds=999)
    first, second = Sweeper(core_with(store, clock), pool), Sweeper(core_with(store, clock), pool)
    assert await first.sweep() == 0, "1 ms before the deadline nothing is due"
    clock.at = T0 + timedelta(seconds=5)
    done = await asyncio.gather(first.sweep(), second.sweep(), first.sweep(), second.sweep())
    assert sum(done) == 1
    assert await endings(store, match_id) == [
        MatchEnded(
            winner=None,
            reason="aborted",
            seed=(await endings(store, match_id))[0].seed,
            no_show=seat,
        )
    ], "a seat that never moved: aborted, and named"
    assert await deadline_row(pool, match_id) is None
    assert first.lateness_s + second.lateness_s == [0.0]
    del seat


async def test_given_a_sweeper_that_dies_with_its_claim_another_times_the_seat_out_after_the_lease(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    clock = Clock()
    core = core_with(store, clock)
    match_id, seat = await started(core)
    clock.at = T0 + timedelta(seconds=1)
    await core.run(match_id, lambda _f, _s: Pass(seat=seat), actor="p")
    other = 1 - seat
    clock.at = T0 + timedelta(seconds=1, milliseconds=10)
    await core.run(match_id, lambda _f, _s: Pass(seat=other), actor="p")  # both have moved
    folded = await core.current(match_id)
    assert folded.state.ended is False

    class Killed(Exception):
        pass

    async def die(_: str) -> None:
        raise Killed

    row = await deadline_row(pool, match_id)
    assert row is not None
    clock.at = row[1]  # type: ignore[assignment]
    dying = Sweeper(core_with(store, clock), pool, lease_s=5.0, before_time_out=die)
    with pytest.raises(Killed):
        await dying.sweep()
    survivor = Sweeper(core_with(store, clock), pool)
    assert await survivor.sweep() == 0, "the claim holds while its lease runs"
    clock.at = clock.at + timedelta(seconds=5, milliseconds=1)
    assert await survivor.sweep() == 1
    assert await survivor.sweep() == 0
    ended = await endings(store, match_id)
    assert [(e.winner, e.reason) for e in ended] == [(1 - row[0], "timeout")]  # type: ignore[operator]


async def test_given_a_move_after_its_time_ran_out_it_is_refused_and_the_time_out_recorded(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    clock = Clock()
    core = core_with(store, clock)
    match_id, seat = await started(core)
    clock.at = T0 + timedelta(seconds=5, milliseconds=1)
    with pytest.raises(RuleConflict) as refused:
        await core.run(match_id, lambda _f, _s: Pass(seat=seat), actor="p")
    assert refused.value.code == "time_expired"
    assert [(e.winner, e.reason) for e in await endings(store, match_id)] == [(None, "aborted")]
    assert await Sweeper(core, pool).sweep() == 0, "the sweeper finds nothing left to do"


async def test_given_a_move_just_before_the_deadline_the_sweeper_appends_nothing(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    clock = Clock()
    core = core_with(store, clock)
    match_id, seat = await started(core)
    clock.at = T0 + timedelta(seconds=4, milliseconds=999)
    await core.run(match_id, lambda _f, _s: Pass(seat=seat), actor="p")
    clock.at = T0 + timedelta(seconds=5)
    assert await Sweeper(core, pool).sweep() == 0
    assert await endings(store, match_id) == []


async def _forge_deadline(
    pool: AsyncConnectionPool, match_id: str, seat: int, due_at: datetime, version: int
) -> None:
    """A deadline row that the log does not justify (a bug elsewhere, a hand edit)."""
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO match_deadlines (match_id, seat, due_at, version) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (match_id) DO UPDATE SET seat = EXCLUDED.seat,"
            " due_at = EXCLUDED.due_at, version = EXCLUDED.version",
            (match_id, seat, due_at, version),
        )


async def test_given_a_deadline_1_ms_before_the_clock_runs_out_the_engine_refuses_the_sweep(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    clock = Clock()
    core = core_with(store, clock)
    match_id, seat = await started(core)
    real = T0 + timedelta(seconds=5)
    await _forge_deadline(pool, match_id, seat, real - timedelta(milliseconds=1), 2)
    clock.at = real - timedelta(milliseconds=1)
    before = await store.load(match_id)
    assert await Sweeper(core, pool).sweep() == 0, "the engine judges the clock, not the row"
    assert await store.load(match_id) == before
    clock.at = real + timedelta(seconds=1)  # past the retry lease: the same row, now due
    assert await Sweeper(core, pool).sweep() == 1
    assert [(e.winner, e.reason) for e in await endings(store, match_id)] == [(None, "aborted")]


async def test_given_an_untimed_match_a_deadline_row_for_it_times_nobody_out(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    clock = Clock()
    core = core_with(store, clock)
    match = await core.start(players=("p0", "p1"), ruleset="standard", ladder_id=None)
    assert await deadline_row(pool, match.match_id) is None, "an untimed match has no deadline"
    await _forge_deadline(pool, match.match_id, 0, T0, match.version)
    clock.at = T0 + timedelta(days=3)
    before = await store.load(match.match_id)
    assert await Sweeper(core, pool).sweep() == 0
    assert await store.load(match.match_id) == before, "the log is unchanged"
    assert await deadline_row(pool, match.match_id) is None, "the stale row is forgotten"
