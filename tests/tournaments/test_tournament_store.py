"""The tournament stream is append-only and hash-chained; its projections
rebuilt from the log equal the ones kept live, for every format."""

from __future__ import annotations

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool
from tournament_engine import AT
from tournament_service import run_tournament, table_rows

from schemas.tournaments import (
    Arena,
    CreateTournament,
    JoinTournament,
    RoundRobin,
    StartTournament,
    Swiss,
)
from service.tournaments import projection, reads
from service.tournaments.service import TournamentService

pytestmark = pytest.mark.anyio

CHANGES = [
    "UPDATE tournament_events SET actor = 'mallory' WHERE version = 2",
    "DELETE FROM tournament_events WHERE version = 2",
    "TRUNCATE tournament_events",
]


@pytest.mark.parametrize("sql", CHANGES)
async def test_even_a_superuser_cannot_change_or_remove_tournament_events(
    pool: AsyncConnectionPool, admin_database_url: str, sql: str
) -> None:
    await run_tournament(TournamentService(pool), "t1", Swiss(rounds=2), 4, seed=1)
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            await admin.execute(sql)


async def test_a_changed_tournament_event_breaks_its_chain(
    pool: AsyncConnectionPool, admin_database_url: str
) -> None:
    await run_tournament(TournamentService(pool), "t1", Swiss(rounds=2), 4, seed=2)
    async with pool.connection() as conn:
        assert (await reads.log(conn, "t1")).chain_ok
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        await admin.execute("SET session_replication_role = replica")  # triggers off
        await admin.execute(
            "UPDATE tournament_events SET data = jsonb_set(data, '{rating}', '3000')"
            " WHERE tournament_id = 't1' AND type = 'player_joined' AND version = 3"
        )
        await admin.commit()
    async with pool.connection() as conn:
        log = await reads.log(conn, "t1")
    assert not log.chain_ok
    assert log.chain_break == (
        "version 3 was changed after it was written: its hash does not match"
    )


@pytest.mark.parametrize(
    "fmt",
    [Swiss(rounds=5), RoundRobin(cycles=2), Arena(minutes=40, avoid_repeats=False)],
    ids=["swiss", "double-round-robin", "arena"],
)
async def test_projections_rebuilt_from_the_log_equal_the_live_ones(
    pool: AsyncConnectionPool, database_url: str, fmt: object
) -> None:
    service = TournamentService(pool)
    await run_tournament(service, "t1", fmt, 9, seed=3)  # type: ignore[arg-type]
    await run_tournament(service, "t2", fmt, 6, seed=4)  # type: ignore[arg-type]
    live = await table_rows(database_url)
    assert len(live["tournament_standings"]) == 15
    assert live["tournaments"][0][6] == "finished"
    async with pool.connection() as conn:
        await projection.rebuild(conn, "t1")
        await projection.rebuild(conn, "t2")
    assert await table_rows(database_url) == live


async def test_a_cold_process_continues_a_tournament_from_the_table_it_finds(
    pool: AsyncConnectionPool, database_url: str
) -> None:
    """Two services on one database (two API processes): each appends on the
    state the other committed, and the rows stay what a rebuild gives."""
    first, second = TournamentService(pool), TournamentService(pool)
    await first.execute(
        "t1",
        CreateTournament(
            at=AT,
            tournament_id="t1",
            name="cup",
            organiser="o",
            ladder_id="l",
            ruleset="standard",
            format=Swiss(rounds=3),
        ),
        actor="o",
    )
    for i in range(5):
        service = first if i % 2 else second
        await service.execute(
            "t1", JoinTournament(at=AT, player_id=f"p{i}", rating=1500.0 + i), actor="p"
        )
    outcome = await first.execute("t1", StartTournament(at=AT), actor="o")
    assert outcome.state.version == 8 and outcome.state.round == 1
    live = await table_rows(database_url)
    async with pool.connection() as conn:
        await projection.rebuild(conn, "t1")
    assert await table_rows(database_url) == live
