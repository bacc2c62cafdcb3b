"""One storage contract for every stream: match events, tournaments, a ladder's seasons.

Each stream is written the way production writes it (match events through
``EventStore.append``, the others through ``Stream.append`` in a transaction,
as ``TournamentService`` and the seasons core do) and must show:

* conflicts: of racing appends at one version one wins, and nothing of the
  losers is written; the conflict surfaces at the INSERT;
* idempotency: an append retried at the version it took writes nothing more
  (and a match command retried with its key gets the first result back);
* immutability: the database refuses UPDATE, DELETE and TRUNCATE, whoever asks;
* catch-up: ``read_after`` a position returns every committed row once, in
  position order, even when transactions commit out of position order.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from schemas.seasons import SeasonScheduled
from schemas.tournaments import PlayerJoined
from service.errors import VersionConflict
from service.seasons.stream import LADDER_EVENTS
from service.store.events import MATCH_EVENTS, EventStore
from service.store.ops import run_async
from service.store.stream import Stream
from service.tournaments.store import TOURNAMENT_EVENTS

from .events_for_tests import passed, played

pytestmark = pytest.mark.anyio

Append = Callable[..., Awaitable[list[int]]]


@dataclass(frozen=True)
class Subject:
    name: str
    stream: Stream[Any, Any]
    event: Callable[[int], Any]
    """The n-th event of a sample log (any valid event of the stream's codec)."""

    def __str__(self) -> str:
        return self.name


AT = datetime(2031, 1, 1, tzinfo=UTC)


def _season(n: int) -> SeasonScheduled:
    return SeasonScheduled(
        season_id=f"s{n}", name=f"S{n}", starts_at=AT, ends_at=AT, soft_reset=0.0, organiser="o"
    )


SUBJECTS = [
    Subject("match events", MATCH_EVENTS, lambda n: played(n % 2) if n % 3 else passed(n % 2)),
    Subject(
        "tournament events",
        TOURNAMENT_EVENTS,
        lambda n: PlayerJoined(at=AT, player_id=f"p{n}", rating=1500.0 + n),
    ),
    Subject("season events", LADDER_EVENTS, _season),
]


@pytest.fixture(params=SUBJECTS, ids=str)
def subject(request: pytest.FixtureRequest) -> Subject:
    found: Subject = request.param
    return found


@pytest.fixture
def ids(subject: Subject, admin_database_url: str) -> Callable[[int], str]:
    """Stream ids ``ids(n)``; a ladder's season stream needs its ladder to exist."""
    prefix = {"match events": "m", "tournament events": "t", "season events": "l"}[subject.name]
    if subject.stream is LADDER_EVENTS:
        with psycopg.connect(admin_database_url, autocommit=True) as admin:
            admin.execute("INSERT INTO players (id, name, token_hash) VALUES ('o', 'o', 'x')")
            admin.execute(
                "INSERT INTO ladders (id, name, ruleset, rating, created_by)"
                " SELECT 'l-' || n, 'l-' || n, 'standard', '{}', 'o' FROM generate_series(0, 15) n"
            )
    return lambda n: f"{prefix}-{n}"


@pytest.fixture
def append(subject: Subject, pool: AsyncConnectionPool) -> Append:
    """The subject's production append: ``(stream id, expected version, events,
    actor, key=None, known=None) -> positions``. ``known``: the hash of the
    expected version, as a writer that folded the stream knows it (a match's
    store remembers it from its own load instead)."""

    async def through_store(
        sid: str, expected: int, events: Sequence[Any], actor: str, key: str | None = None,
        known: bytes | None = None, store: EventStore | None = None,
    ) -> list[int]:  # fmt: skip
        result = await (store or EventStore(pool)).append(
            sid, expected, events, actor=actor, idempotency_key=key
        )
        return list(result.positions)

    async def through_stream(
        sid: str, expected: int, events: Sequence[Any], actor: str, key: str | None = None,
        known: bytes | None = None, store: EventStore | None = None,
    ) -> list[int]:  # fmt: skip
        assert key is None, "only match commands carry idempotency keys"
        async with pool.connection() as conn, conn.transaction():
            rows = await run_async(
                conn, subject.stream.append(sid, expected, events, actor=actor, prev_hash=known)
            )
        return [r.position for r in rows]

    return through_store if subject.stream is MATCH_EVENTS else through_stream


async def rows_of(pool: AsyncConnectionPool, stream: Stream[Any, Any], sid: str) -> list[Any]:
    async with pool.connection() as conn:
        return await run_async(conn, stream.load(sid))


async def read_after(
    pool: AsyncConnectionPool, stream: Stream[Any, Any], after: int, limit: int = 1000
) -> list[Any]:
    """The stream's catch-up read (the match events' through ``EventStore.read_all``)."""
    if stream is MATCH_EVENTS:
        return await EventStore(pool).read_all(after_position=after, limit=limit)
    async with pool.connection() as conn:
        return await run_async(conn, stream.read_after(after, limit=limit))


def delay_every_insert(admin_database_url: str, table: str, seconds: str) -> None:
    """A trigger that keeps each INSERT's transaction open ``seconds`` (SQL) after
    its rows are in: commits land late and out of order, racers meet at the key."""
    with psycopg.connect(admin_database_url, autocommit=True) as admin:
        admin.execute(
            "CREATE FUNCTION test_delay() RETURNS trigger LANGUAGE plpgsql AS $$"
            f" BEGIN PERFORM pg_sleep({seconds}); RETURN NULL; END $$"
        )
        admin.execute(
            f"CREATE TRIGGER test_delay AFTER INSERT ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION test_delay()"
        )


# -- conflicts ----------------------------------------------------------------------------


async def test_of_racing_appends_at_one_version_one_wins_and_nothing_of_the_losers_is_written(
    subject: Subject,
    pool: AsyncConnectionPool,
    append: Append,
    ids: Callable[[int], str],
    admin_database_url: str,
) -> None:
    sid = ids(0)
    await append(sid, 0, [subject.event(0), subject.event(1)], "first")
    head = (await rows_of(pool, subject.stream, sid))[-1]
    # Each racer knows the head (folded, or a store that loaded the stream), so
    # none reads it: all of them go straight to the INSERT and meet there.
    stores = [EventStore(pool) for _ in range(3)]
    if subject.stream is MATCH_EVENTS:
        for store in stores:
            await store.load(sid)
    delay_every_insert(admin_database_url, subject.stream.table, "0.3")
    won: list[str] = []
    lost: list[VersionConflict] = []

    async def racer(n: int) -> None:
        events = [subject.event(10 * n + k) for k in range(3)]
        try:
            await append(sid, 2, events, f"racer-{n}", known=head.hash, store=stores[n])
        except VersionConflict as exc:
            lost.append(exc)
        else:
            won.append(f"racer-{n}")

    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(racer, n)

    assert len(won) == 1 and len(lost) == 2
    rows = await rows_of(pool, subject.stream, sid)
    assert [r.version for r in rows] == [1, 2, 3, 4, 5]
    assert {r.actor for r in rows[2:]} == set(won)
    assert all(exc.detail.endswith("you expected 2") for exc in lost)
    assert any(isinstance(exc.__cause__, psycopg.errors.UniqueViolation) for exc in lost), (
        "no loser met the unique key: the race was not at the INSERT"
    )


async def test_an_append_at_a_version_the_stream_is_not_at_writes_nothing(
    subject: Subject, pool: AsyncConnectionPool, append: Append, ids: Callable[[int], str]
) -> None:
    sid = ids(0)
    await append(sid, 0, [subject.event(0)], "first")
    for expected in (0, 2, 7):
        with pytest.raises(VersionConflict):
            await append(sid, expected, [subject.event(1)], "late")
    assert [r.actor for r in await rows_of(pool, subject.stream, sid)] == ["first"]


async def test_an_append_that_builds_on_a_head_the_stream_does_not_have_writes_nothing(
    subject: Subject, pool: AsyncConnectionPool, append: Append, ids: Callable[[int], str]
) -> None:
    """A writer whose fold is wrong (a version it never saw, a hash that is not
    the row's) must not leave a gap or a broken link in the chain."""
    sid = ids(0)
    await append(sid, 0, [subject.event(0)], "first")
    (head,) = await rows_of(pool, subject.stream, sid)
    wrong = [(2, head.hash), (5, bytes(32))]
    if subject.stream is not MATCH_EVENTS:  # the store keeps its own heads (committed ones)
        wrong.append((1, bytes(32)))  # the right version, another hash
    for expected, known in wrong:
        with pytest.raises(VersionConflict):
            await append(sid, expected, [subject.event(1)], "wrong", known=known)
    assert [r.actor for r in await rows_of(pool, subject.stream, sid)] == ["first"]


# -- idempotency --------------------------------------------------------------------------


async def test_an_append_retried_at_the_version_it_took_writes_nothing_more(
    subject: Subject, pool: AsyncConnectionPool, append: Append, ids: Callable[[int], str]
) -> None:
    sid = ids(0)
    events = [subject.event(0), subject.event(1)]
    await append(sid, 0, events, "writer")
    before = await rows_of(pool, subject.stream, sid)
    with pytest.raises(VersionConflict):
        await append(sid, 0, events, "writer")  # the same append again: a lost answer retried
    assert await rows_of(pool, subject.stream, sid) == before


async def test_a_match_command_retried_with_its_key_gets_the_first_result_back(
    store: EventStore,
) -> None:
    # Only match commands carry idempotency keys (tournament and season commands
    # are decided on the folded state, and a retry is refused by the engine).
    first = await store.append("m-0", 0, [played(0), passed(1)], actor="p", idempotency_key="k")
    again = await store.append("m-0", 0, [played(0), passed(1)], actor="p", idempotency_key="k")
    assert again.replayed and again.positions == first.positions
    assert [e.version for e in await store.load("m-0")] == [1, 2]


# -- immutability -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change", ["UPDATE {t} SET actor = 'x'", "DELETE FROM {t}", "TRUNCATE {t}"]
)
async def test_the_database_refuses_to_change_or_remove_a_row_even_for_a_superuser(
    subject: Subject,
    append: Append,
    ids: Callable[[int], str],
    admin_database_url: str,
    database_url: str,
    change: str,
) -> None:
    await append(ids(0), 0, [subject.event(0)], "writer")
    sql = change.format(t=subject.stream.table)
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            await admin.execute(sql)
    async with await psycopg.AsyncConnection.connect(database_url) as app:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await app.execute(sql)


async def test_rows_read_back_form_the_stream_s_hash_chain(
    subject: Subject, pool: AsyncConnectionPool, append: Append, ids: Callable[[int], str]
) -> None:
    sid = ids(0)
    await append(sid, 0, [subject.event(0), subject.event(1)], "a")
    await append(sid, 2, [subject.event(2)], "b")
    async with pool.connection() as conn:
        cur = await conn.execute(
            f"SELECT {subject.stream.id_column}, version, type, data::text AS data, actor,"
            f" recorded_at, prev_hash, hash FROM {subject.stream.table}"
            f" WHERE {subject.stream.id_column} = %s",
            (sid,),
        )
        names = [d.name for d in cur.description or ()]
        raw = [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]
    assert subject.stream.verify(raw) is None
    raw[1]["actor"] = "mallory"
    broken = subject.stream.verify(raw)
    assert broken is not None and broken.version == 2 and broken.problem == "hash_mismatch"


# -- catch-up -----------------------------------------------------------------------------


async def wait_for_a_barrier_waiter(pool: AsyncConnectionPool, bound_s: float = 10.0) -> None:
    """Until some backend of this database waits for an advisory lock (bounded)."""
    deadline = time.monotonic() + bound_s
    async with pool.connection() as conn:
        while time.monotonic() < deadline:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE l.locktype = 'advisory' AND NOT l.granted"
                " AND a.datname = current_database()"
            )
            row = await cur.fetchone()
            if row is not None and row[0] > 0:
                return
            await anyio.sleep(0.01)
    raise AssertionError("the reader never waited at the barrier")


async def test_a_reader_never_sees_a_later_position_before_an_earlier_one_commits(
    subject: Subject,
    pool: AsyncConnectionPool,
    append: Append,
    ids: Callable[[int], str],
    database_url: str,
) -> None:
    seen = await append(ids(0), 0, [subject.event(0)], "first")
    async with await psycopg.AsyncConnection.connect(database_url) as slow:
        # A writer that stalls before COMMIT, following the stream's own protocol.
        late = [
            r.position
            for r in await run_async(
                slow, subject.stream.append(ids(1), 0, [subject.event(1)], actor="slow")
            )
        ]
        fast = await append(ids(2), 0, [subject.event(2), subject.event(3)], "fast")
        assert min(fast) > max(late)
        async with pool.connection() as conn:  # the hazard is real: position > last skips one
            cur = await conn.execute(
                f"SELECT position FROM {subject.stream.table}"
                " WHERE position > %s ORDER BY position",
                (seen[-1],),
            )
            assert [p for (p,) in await cur.fetchall()] == fast

        got: list[int] = []

        async def read() -> None:
            got.extend(r.position for r in await read_after(pool, subject.stream, seen[-1]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await wait_for_a_barrier_waiter(pool)
            assert got == [], "read_after returned rows past an uncommitted position"
            await slow.commit()
    assert got == [*late, *fast]


async def test_a_reader_polling_during_many_writers_sees_every_row_once_in_order(
    subject: Subject,
    pool: AsyncConnectionPool,
    append: Append,
    ids: Callable[[int], str],
    admin_database_url: str,
) -> None:
    # Appends pause for up to 10 ms after taking their positions, so commits land
    # out of position order all the time.
    delay_every_insert(admin_database_url, subject.stream.table, "random() * 0.01")
    streams = [ids(n) for n in range(8)]
    done = anyio.Event()
    seen: list[int] = []
    conflicts = 0

    async def writer(rng: random.Random) -> None:
        nonlocal conflicts
        for k in range(25):
            sid = rng.choice(streams[:3]) if rng.random() < 0.5 else rng.choice(streams)
            version = len(await rows_of(pool, subject.stream, sid))
            try:
                await append(sid, version, [subject.event(k)] * rng.randint(1, 3), "w")
            except VersionConflict:
                conflicts += 1  # a rolled-back append leaves a gap in positions

    async def reader() -> None:
        last = 0
        while True:
            finished = done.is_set()
            batch = await read_after(pool, subject.stream, last, limit=7)
            seen.extend(r.position for r in batch)
            if batch:
                last = batch[-1].position
            elif finished:
                return

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            async with anyio.create_task_group() as writers:
                for n in range(6):
                    writers.start_soon(writer, random.Random(n))
            done.set()
    async with pool.connection() as conn:
        cur = await conn.execute(f"SELECT position FROM {subject.stream.table} ORDER BY position")
        committed = [p for (p,) in await cur.fetchall()]
    assert seen == committed
    assert conflicts > 0, "the writers never raced: the test proves nothing"
