"""Racing writers and the global order projections follow."""

from __future__ import annotations

import random
from typing import Any

import anyio
import psycopg
import pytest

from service.errors import VersionConflict
from service.store.events import APPEND_LOCK_KEY, EventStore

from .events_for_tests import opening, passed, played

pytestmark = pytest.mark.anyio


async def test_racing_writers_on_one_match_leave_gapless_unique_versions(
    store: EventStore,
) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    wins: list[tuple[str, int]] = []
    conflicts = 0

    async def writer(name: str) -> None:
        nonlocal conflicts
        for _ in range(12):
            expected = await store.version("m-1")
            try:
                result = await store.append("m-1", expected, [played(0), passed(1)], actor=name)
            except VersionConflict:
                conflicts += 1
            else:
                wins.append((name, result.first_version))

    async with anyio.create_task_group() as tg:
        for n in range(8):
            tg.start_soon(writer, f"p-{n}")

    loaded = await store.load("m-1")
    versions = [e.version for e in loaded]
    assert versions == list(range(1, len(loaded) + 1))
    # Each win wrote exactly its two versions; each version has exactly one winner.
    won_versions = sorted(v for _, first in wins for v in (first, first + 1))
    assert won_versions == list(range(3, len(loaded) + 1))
    by_version = {e.version: e.actor for e in loaded}
    assert all(by_version[first] == by_version[first + 1] == name for name, first in wins)
    assert conflicts > 0, "the writers never raced: the test proves nothing"


async def _waiting_for_a_lock(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Some session of this database waits for an advisory lock (another holds it)."""
    cur = await conn.execute(
        "SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND NOT l.granted"
        "   AND a.datname = current_database()"
    )
    return await cur.fetchone() is not None


async def test_a_reader_never_sees_a_later_position_before_an_earlier_one_commits(
    store: EventStore, admin_database_url: str
) -> None:
    """A late commit: position p1 is taken, p2 > p1 commits first."""
    await store.append("m-0", 0, opening("m-0"), actor="system")
    seen = [e.position for e in await store.read_all()]
    async with await psycopg.AsyncConnection.connect(admin_database_url) as slow:
        # A writer following the store's protocol that stalls before COMMIT.
        await slow.execute("SELECT pg_advisory_xact_lock_shared(%s)", (APPEND_LOCK_KEY,))
        cur = await slow.execute(
            "INSERT INTO events (match_id, version, type, data, actor, recorded_at,"
            " prev_hash, hash) VALUES ('m-slow', 1, 'passed',"
            """ '{"type":"passed","v":1,"seat":0,"hand":1,"round":1,"automatic":false}',"""
            " 'system', now(), %s, %s) RETURNING position",
            (bytes(32), bytes(32)),
        )
        (late,) = await cur.fetchone()  # type: ignore[misc]
        fast = await store.append("m-1", 0, opening("m-1"), actor="system")
        assert min(fast.positions) > late

        # The hazard is real: a plain "position > last" query sees p2 without p1.
        async with store.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT position FROM events WHERE position > %s ORDER BY position",
                (seen[-1],),
            )
            assert [p for (p,) in await cur.fetchall()] == list(fast.positions)

        got: list[int] = []

        async def read() -> None:
            got.extend(e.position for e in await store.read_all(after_position=seen[-1]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            # the reader waits at the barrier, behind the stalled writer's lock
            with anyio.fail_after(10):
                while not await _waiting_for_a_lock(slow):
                    await anyio.sleep(0.02)
            assert got == [], "read_all returned events past an uncommitted position"
            await slow.commit()
    assert got == [late, *fast.positions]


JITTER_SQL = """
CREATE FUNCTION test_commit_jitter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(random() * 0.01);
    RETURN NULL;
END
$$;
CREATE TRIGGER test_commit_jitter AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION test_commit_jitter();
"""


async def test_a_reader_polling_during_many_writers_sees_every_position_once_in_order(
    store: EventStore, admin_database_url: str
) -> None:
    # Appends pause for up to 10 ms after taking their positions, so commits
    # land out of position order all the time (a reader that merely followed
    # "position > last" fails this test within a few appends).
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        await admin.execute(JITTER_SQL)
        await admin.commit()
    matches = [f"m-{n}" for n in range(12)]
    for match_id in matches:
        await store.append(match_id, 0, opening(match_id), actor="system")
    done = anyio.Event()
    seen: list[int] = []
    conflicts = 0

    async def writer(rng: random.Random) -> None:
        nonlocal conflicts
        for _ in range(40):
            match_id = rng.choice(matches[:4]) if rng.random() < 0.5 else rng.choice(matches)
            expected = await store.version(match_id)
            events = [played(0), passed(1), played(1)][: rng.randint(1, 3)]
            try:
                await store.append(match_id, expected, events, actor="p-ann")
            except VersionConflict:
                conflicts += 1  # a rolled-back append leaves a gap in positions

    async def reader() -> None:
        last = 0
        while True:
            finished = done.is_set()
            batch = await store.read_all(after_position=last, limit=7)
            seen.extend(e.position for e in batch)
            if batch:
                last = batch[-1].position
            elif finished:
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        async with anyio.create_task_group() as writers:
            for n in range(8):
                writers.start_soon(writer, random.Random(n))
        done.set()

    async with store.pool.connection() as conn:
        cur = await conn.execute("SELECT position FROM events ORDER BY position")
        committed = [p for (p,) in await cur.fetchall()]
    assert seen == committed
    assert len(committed) > 300
    assert conflicts > 0, "no append ever lost a race: the test proves less than it claims"
