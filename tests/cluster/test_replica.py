"""service/store/replica.py against the harness's real primary and hot standby: reads
that may lag go to the standby while it is close; a lagging or a dead one is skipped;
a command never reads it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from service.cluster.postgres_pair import PostgresPair, server_url
from service.store.db import open_pool, scratch_database
from service.store.replica import (
    ReadRouting,
    StandbySettings,
    judge,
    lag_from_marks,
    open_read_routing,
)

pytestmark = pytest.mark.timeout(120)

WAIT_S = 15.0


@pytest.fixture
def replicated_database(pg_pair: PostgresPair) -> Any:
    """A database of this test's own on the primary, with a table, replayed on the standby."""
    with scratch_database(pg_pair.primary.url, "replica_") as name:
        with psycopg.connect(server_url(pg_pair.primary.port, name), autocommit=True) as conn:
            conn.execute("CREATE TABLE marks (n int PRIMARY KEY)")
        pg_pair.wait_replayed()
        yield name


@pytest.fixture
async def routing(pg_pair: PostgresPair, replicated_database: str) -> AsyncIterator[ReadRouting]:
    primary = await open_pool(server_url(pg_pair.primary.port, replicated_database), min_size=1)
    settings = StandbySettings(
        url=server_url(pg_pair.standby.port, replicated_database), max_lag_s=0.3, check_s=0.1
    )
    routing = await open_read_routing(primary, settings)
    try:
        yield routing
    finally:
        await routing.close()
        await primary.close()


async def _served_by(routing: ReadRouting, *, may_lag: bool) -> tuple[bool, int]:
    """(in recovery, port) of the server that answered."""
    async with routing.connection(may_lag=may_lag) as conn:
        cur = await conn.execute("SELECT pg_is_in_recovery(), current_setting('port')::int")
        row = await cur.fetchone()
    assert row is not None
    return bool(row[0]), int(row[1])


async def _until_verdict(routing: ReadRouting, usable: bool) -> str:
    deadline = time.monotonic() + WAIT_S
    while True:
        verdict = await routing.refresh()
        if verdict.usable is usable:
            return verdict.why
        assert time.monotonic() < deadline, f"still {verdict}"


@pytest.mark.anyio
async def test_given_a_close_standby_then_lagging_reads_go_to_it_and_the_rest_to_the_primary(
    routing: ReadRouting, pg_pair: PostgresPair
) -> None:
    assert routing.verdict.usable, routing.verdict
    assert await _served_by(routing, may_lag=True) == (True, pg_pair.standby.port)
    assert await _served_by(routing, may_lag=False) == (False, pg_pair.primary.port)

    # A command writes, and what must see it reads the primary: it sees it at once.
    async with routing.connection(may_lag=False) as conn:
        await conn.execute("INSERT INTO marks VALUES (1)")
    async with routing.connection(may_lag=False) as conn:
        cur = await conn.execute("SELECT count(*) FROM marks")
        assert await cur.fetchone() == (1,)
    # A lagging read gets there a moment later, from the standby.
    deadline = time.monotonic() + WAIT_S
    while True:
        async with routing.connection(may_lag=True) as conn:
            cur = await conn.execute("SELECT count(*), pg_is_in_recovery() FROM marks")
            row = await cur.fetchone()
        if row == (1, True):
            break
        assert row is not None and row[1] is True, "a lagging read left the standby"
        assert time.monotonic() < deadline, "the standby never replayed the insert"
    assert routing.reads["standby"] >= 2


@pytest.mark.anyio
async def test_given_a_standby_with_replay_paused_then_past_the_lag_bound_reads_go_to_the_primary(
    routing: ReadRouting, pg_pair: PostgresPair, replicated_database: str
) -> None:
    standby_admin = server_url(pg_pair.standby.port, replicated_database)
    with psycopg.connect(standby_admin, autocommit=True) as standby:
        standby.execute("SELECT pg_wal_replay_pause()")
        try:
            async with routing.connection(may_lag=False) as conn:
                await conn.execute("INSERT INTO marks VALUES (2)")
                cur = await conn.execute("SELECT pg_current_wal_lsn()::text")
                written = (await cur.fetchone() or ("",))[0]
            deadline = time.monotonic() + WAIT_S
            while not standby.execute(
                "SELECT pg_last_wal_receive_lsn() >= %s::pg_lsn", (written,)
            ).fetchone()[0]:  # type: ignore[index]
                assert time.monotonic() < deadline, "the standby never received the insert"
            why = await _until_verdict(routing, usable=False)
            assert "behind" in why, why
            assert await _served_by(routing, may_lag=True) == (False, pg_pair.primary.port)
            assert routing.reads["primary"] >= 1
        finally:
            standby.execute("SELECT pg_wal_replay_resume()")
    await _until_verdict(routing, usable=True)
    assert await _served_by(routing, may_lag=True) == (True, pg_pair.standby.port)


@pytest.mark.anyio
async def test_given_a_standby_that_goes_down_then_reads_go_to_the_primary_until_it_is_back(
    routing: ReadRouting, pg_pair: PostgresPair
) -> None:
    assert await _served_by(routing, may_lag=True) == (True, pg_pair.standby.port)
    pg_pair.standby.stop()
    try:
        # Before any check notices: the read goes on the primary all the same.
        assert await _served_by(routing, may_lag=True) == (False, pg_pair.primary.port)
        assert not routing.standby_usable()
        why = await _until_verdict(routing, usable=False)
        assert why.startswith("down"), why
        assert await _served_by(routing, may_lag=True) == (False, pg_pair.primary.port)
    finally:
        pg_pair.restart_standby()
    # Back: once a check finds it close and its pool has connected again.
    deadline = time.monotonic() + WAIT_S
    while await _served_by(routing, may_lag=True) != (True, pg_pair.standby.port):
        assert time.monotonic() < deadline, routing.verdict
        await routing.refresh()


@pytest.mark.anyio
async def test_given_no_standby_configured_then_every_read_is_the_primarys(
    pg_pair: PostgresPair, replicated_database: str
) -> None:
    primary: AsyncConnectionPool = await open_pool(
        server_url(pg_pair.primary.port, replicated_database), min_size=1
    )
    routing = await open_read_routing(primary, StandbySettings(url=""))
    try:
        assert await _served_by(routing, may_lag=True) == (False, pg_pair.primary.port)
        assert routing.standby is None
    finally:
        await routing.close()
        await primary.close()


@pytest.mark.parametrize(
    ("in_recovery", "lag", "skipped_because"),
    [
        (False, 0.0, "not a standby"),
        (True, None, "unknown"),
        (True, 5.5, "5.5 s behind"),
        (True, 4.9, ""),
        (True, 0.0, ""),
    ],
)
def test_given_what_the_standby_says_then_it_is_skipped_for_the_right_reason(
    in_recovery: bool, lag: float | None, skipped_because: str
) -> None:
    why = judge(in_recovery, lag, max_lag_s=5.0)
    assert (why == "") if not skipped_because else (skipped_because in why)


def test_given_the_primarys_positions_then_the_lag_is_the_age_of_the_last_one_replayed() -> None:
    marks = [(10.0, 100), (11.0, 100), (12.0, 250), (13.0, 400)]
    assert lag_from_marks(marks, replayed=400, now=13.5) == 0.5  # replayed all: current
    assert lag_from_marks(marks, replayed=300, now=13.5) == 1.5  # has what the primary had at 12
    assert lag_from_marks(marks, replayed=100, now=13.5) == 2.5  # a quiet spell is no lag
    assert lag_from_marks(marks, replayed=99, now=13.5) is None  # behind everything noted
    assert lag_from_marks([], replayed=400, now=13.5) is None
