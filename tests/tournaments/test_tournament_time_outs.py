"""A tournament game is lost on time only by the rules: the claim goes through the
match core and the engine, and the runner records what the match log then says.
An untimed game has no time-out, and a claim 1 ms early records nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from harness import HandClock
from psycopg_pool import AsyncConnectionPool
from tournament_engine import AT

from schemas.rules import MatchTerms, RealTime
from schemas.tournaments import CreateTournament, JoinTournament, StartTournament, Swiss
from service.engine import clock
from service.errors import RuleConflict
from service.matches import MatchCore, clocks
from service.store import EventStore
from service.tournaments import match_adapter
from service.tournaments.runner import TournamentRunner
from service.tournaments.service import TournamentService
from service.tournaments.state import running_games

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)


async def _game(pool: AsyncConnectionPool, terms: MatchTerms) -> tuple[MatchCore, HandClock, str]:
    """A running two-player Swiss tournament whose one game's match has started."""
    events = EventStore(pool)

    async def ladder_terms(_: str) -> MatchTerms:
        return terms

    core = MatchCore(events, ladder_terms=ladder_terms)
    now = HandClock(T0)
    core.now = now
    service = TournamentService(pool)
    await service.execute(
        "t1",
        CreateTournament(
            at=AT, tournament_id="t1", name="cup", organiser="o", ladder_id="ladder",
            ruleset="duel", format=Swiss(rounds=1),
        ),
        actor="o",
    )  # fmt: skip
    for i in range(2):
        await service.execute(
            "t1", JoinTournament(at=AT, player_id=f"p{i}", rating=1500.0), actor="p"
        )
    state = (await service.execute("t1", StartTournament(at=AT), actor="o")).state
    (game,) = running_games(state)
    assert game.match_id is not None
    await match_adapter.start_game(
        core,
        match_adapter.GameToStart(
            tournament_id="t1", match_id=game.match_id, players=game.players,
            ladder_id="ladder", ruleset="duel",
        ),
    )  # fmt: skip
    return core, now, game.match_id


def _runner(pool: AsyncConnectionPool) -> TournamentRunner:
    return TournamentRunner(
        pool, EventStore(pool), TournamentService(pool), None, wake=asyncio.Event()
    )


async def _results(pool: AsyncConnectionPool) -> list[tuple[object, ...]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT data FROM tournament_events WHERE type = 'result_recorded' ORDER BY version"
        )
        return list(await cur.fetchall())


async def test_given_an_untimed_tournament_game_a_time_out_claim_is_refused_and_nothing_recorded(
    pool: AsyncConnectionPool,
) -> None:
    core, now, match_id = await _game(pool, MatchTerms())
    now.at = T0 + timedelta(days=2)
    for player in ("p0", "p1"):
        with pytest.raises(RuleConflict) as refused:
            await clocks.claim_time_out(core, match_id, player)
        assert refused.value.code == "match_untimed"
    await _runner(pool).run_once()
    assert await _results(pool) == [], "the game is still open"


async def test_given_a_timed_tournament_game_a_claim_1_ms_early_records_nothing_on_time_a_forfeit(
    pool: AsyncConnectionPool,
) -> None:
    core, now, match_id = await _game(pool, MatchTerms(clock=RealTime(base_s=30, no_show_s=10)))
    folded = await core.current(match_id)
    seat = folded.state.to_move
    assert seat is not None
    due = clock.deadline(folded.state, seat)
    assert due == T0 + timedelta(seconds=10)
    claimer = folded.created.players[1 - seat]
    now.at = due - MS
    with pytest.raises(RuleConflict) as early:
        await clocks.claim_time_out(core, match_id, claimer)
    assert early.value.code == "time_not_expired"
    runner = _runner(pool)
    await runner.run_once()
    assert await _results(pool) == []
    now.at = due
    await clocks.claim_time_out(core, match_id, claimer)
    await runner.run_once()
    (recorded,) = await _results(pool)
    data = recorded[0]
    assert isinstance(data, dict) and data["reason"] == "aborted"
    assert data["result"] == ("-+" if seat == 0 else "+-"), "the absent seat forfeits"
