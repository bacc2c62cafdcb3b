"""The results runner: it reads the match log, applies each result once with its
position in the same transaction, needs no hint, and one runner at a time works."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from psycopg_pool import AsyncConnectionPool
from tournament_engine import AT

from schemas.tournaments import (
    Arena,
    CreateTournament,
    Format,
    JoinTournament,
    StartTournament,
    Swiss,
)
from service.matches import MatchCore
from service.matches.seats import ResignBody, seat_maker
from service.store import EventStore
from service.store.db import open_pool
from service.tournaments import match_adapter
from service.tournaments.runner import TournamentRunner
from service.tournaments.service import TournamentService
from service.tournaments.state import TournamentState, running_games

pytestmark = pytest.mark.anyio


class World:
    """A tournament service, a match service and runners on one database."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self.events = EventStore(pool)
        self.matches = MatchCore(self.events)
        self.tournaments = TournamentService(pool)

    def runner(self, pool: AsyncConnectionPool | None = None, **kw: object) -> TournamentRunner:
        pool = pool or self.pool
        matches = self.matches

        async def start(game: match_adapter.GameToStart) -> bool:
            return await match_adapter.start_game(matches, game)

        return TournamentRunner(
            pool, EventStore(pool), TournamentService(pool), start, wake=asyncio.Event(), **kw
        )  # type: ignore[arg-type]

    async def tournament(self, fmt: Format, players: int) -> TournamentState:
        await self.tournaments.execute(
            "t1",
            CreateTournament(
                at=AT,
                tournament_id="t1",
                name="cup",
                organiser="o",
                ladder_id="ladder",
                ruleset="duel",
                format=fmt,
            ),
            actor="o",
        )
        for i in range(players):
            await self.tournaments.execute(
                "t1", JoinTournament(at=AT, player_id=f"p{i}", rating=1500.0), actor="p"
            )
        return (await self.tournaments.execute("t1", StartTournament(at=AT), actor="o")).state

    async def resign_all(self, state: TournamentState) -> int:
        """Seat 1 resigns every open game of ``state`` (starting matches as needed)."""
        count = 0
        for game in running_games(state):
            assert game.match_id is not None
            await match_adapter.start_game(
                self.matches,
                match_adapter.GameToStart(
                    tournament_id="t1",
                    match_id=game.match_id,
                    players=game.players,
                    ladder_id="ladder",
                    ruleset="duel",
                ),
            )
            loser = game.players[1]
            await self.matches.run(game.match_id, seat_maker(loser, ResignBody()), actor=loser)
            count += 1
        return count

    async def recorded(self) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM tournament_events WHERE type = 'result_recorded'"
            )
            row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    async def position(self) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT position FROM tournament_runner WHERE name = 'results'"
            )
            row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    async def last_end(self) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT max(position) FROM events WHERE type = 'match_ended'")
            row = await cur.fetchone()
        assert row is not None
        return int(row[0])


async def test_each_result_is_applied_once_with_the_position_it_was_read_at(
    pool: AsyncConnectionPool,
) -> None:
    world = World(pool)
    state = await world.tournament(Swiss(rounds=2), 4)
    assert await world.resign_all(state) == 2
    runner = world.runner()
    assert await runner.run_once() == 2
    assert await world.recorded() == 2
    assert await world.position() == await world.last_end()
    assert await runner.run_once() == 0  # nothing new: nothing applied again
    assert await world.recorded() == 2
    state = await world.tournaments.current("t1")
    assert state.round == 2  # the round closed and the next was paired
    # ... and its matches were started by the same pass
    async with pool.connection() as conn:
        assert await match_adapter.unstarted_games(conn) == []


class _Refusals(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


async def test_two_runners_at_once_apply_every_result_exactly_once(
    pool: AsyncConnectionPool, database_url: str
) -> None:
    refusals = _Refusals()
    logging.getLogger("matcha.tournaments.runner").addHandler(refusals)
    world = World(pool)
    other_pool = await open_pool(database_url, min_size=1, max_size=4)
    try:
        first, second = world.runner(), world.runner(other_pool)
        state = await world.tournament(Swiss(rounds=3), 8)
        for _ in range(3):
            resigned = await world.resign_all(state)
            assert resigned == 4
            before = await world.recorded()
            deadline = time.monotonic() + 30
            while await world.recorded() < before + resigned:
                await asyncio.gather(first.run_once(), second.run_once())
                assert time.monotonic() < deadline
            state = await world.tournaments.current("t1")
        assert state.phase == "finished"
        assert await world.recorded() == 12
        # a result applied twice would have been refused (result_recorded) and logged
        assert not [m for m in refusals.seen if "refused" in m]
        assert first.passes + second.passes >= 3
    finally:
        logging.getLogger("matcha.tournaments.runner").removeHandler(refusals)
        await other_pool.close()


async def test_a_result_needs_no_hint_to_be_applied(pool: AsyncConnectionPool) -> None:
    world = World(pool)
    state = await world.tournament(Swiss(rounds=2), 2)
    runner = world.runner(poll_s=0.2)
    task = asyncio.create_task(runner.run_forever())
    try:
        await world.resign_all(state)  # nobody sets runner.wake
        deadline = time.monotonic() + 10
        while await world.recorded() < 1:
            assert time.monotonic() < deadline, "the runner did not look by itself"
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_runners_clock_ends_an_arena_whose_time_is_up(pool: AsyncConnectionPool) -> None:
    world = World(pool)
    state = await world.tournament(Arena(minutes=10), 4)
    assert state.ends_at is not None
    too_soon = world.runner(clock=lambda: datetime(2030, 1, 1, 18, 9, tzinfo=UTC))
    await too_soon.run_once()
    assert (await world.tournaments.current("t1")).phase == "running"
    on_time = world.runner(clock=lambda: state.ends_at + timedelta(seconds=1))  # type: ignore[operator]
    await on_time.run_once()
    assert (await world.tournaments.current("t1")).phase == "finished"


async def test_a_game_whose_match_was_never_started_is_started_by_the_runner(
    pool: AsyncConnectionPool,
) -> None:
    world = World(pool)  # no after-commit hook: nothing started the round's matches
    await world.tournament(Swiss(rounds=2), 4)
    async with pool.connection() as conn:
        assert len(await match_adapter.unstarted_games(conn)) == 2
    assert await world.runner().start_missing() == 2
    async with pool.connection() as conn:
        assert await match_adapter.unstarted_games(conn) == []
    assert await world.runner().start_missing() == 0  # and never twice
