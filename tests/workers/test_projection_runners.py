"""The projection runners read the log, not the broker: each pass applies a stretch
of the log after its recorded position and records the new one in the same
transaction; a hint only wakes a runner, and a lost one costs its poll."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from workers_harness import finish_match, hand_elo, new_ladder, played_log, store_log, table

from schemas.events import decode_event
from service.broker.wake import hint
from service.matches.summaries import summarise
from service.replays import build_from_log
from service.store import EventStore
from workers.projections import (
    ArchivesProjection,
    RatingsProjection,
    Runner,
    SummariesProjection,
    catch_up_all,
)
from workers.projections import positions as runner_rows
from workers.projections.runner import start
from workers.projections.wake import Listener
from workers.projections.wake import start as start_listener

pytestmark = pytest.mark.anyio


def _waiting_for_a_lock(conn: psycopg.Connection) -> bool:
    """Some session of this database waits for an advisory lock (another holds it)."""
    row = conn.execute(
        "SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()"
    ).fetchone()
    return row is not None


def _archives(conn: psycopg.Connection) -> dict[str, bytes]:
    return {
        m: bytes(a)
        for m, a in conn.execute("SELECT match_id, archive FROM replay_archives").fetchall()
    }


def _head(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0])


def _until(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds until ``check()`` held (fails after ``timeout``)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, f"{what} did not happen in {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


async def test_the_archives_runner_builds_every_finished_match_and_records_its_position(
    store: EventStore, conn: psycopg.Connection, database_url: str, stop: threading.Event
) -> None:
    finished = [f"arc-{seed}" for seed in range(3)]
    for seed, match_id in enumerate(finished):
        await store_log(store, match_id, played_log(seed, match_id))
    playing = played_log(7, "arc-playing")
    await store_log(store, "arc-playing", playing, upto=len(playing) - 3)
    runner = Runner(ArchivesProjection(), database_url, stop=stop)

    assert runner.catch_up() == 3
    stored = _archives(conn)
    assert sorted(stored) == sorted(finished)
    for match_id in finished:  # the projection is its rebuild from the log, byte for byte
        rebuilt = build_from_log(conn, match_id)
        assert rebuilt is not None and rebuilt.data == stored[match_id]
    assert runner_rows.positions(conn)["archives"] == _head(conn)
    assert runner.catch_up() == 0  # nothing new: nothing applied, the position stays

    await store_log(store, "arc-playing", playing, after=len(playing) - 3)
    assert runner.catch_up() == 1
    assert "arc-playing" in _archives(conn)
    assert runner_rows.positions(conn)["archives"] == _head(conn)
    runner.close()


async def test_a_stretch_another_worker_is_applying_is_skipped_not_applied_twice(
    store: EventStore,
    conn: psycopg.Connection,
    database_url: str,
    stop: threading.Event,
) -> None:
    await store_log(store, "held-1", played_log(11, "held-1"))
    runner = Runner(ArchivesProjection(), database_url, stop=stop)
    other = psycopg.connect(database_url)  # another worker, in the middle of its pass
    try:
        other.execute(
            "SELECT position FROM projection_positions WHERE name = 'archives' FOR UPDATE"
        )
        assert runner.catch_up() == 0
        assert _archives(conn) == {}
        other.close()  # that worker dies: PostgreSQL frees its row with its connection
        # (the server ends that backend a moment after the socket closes: until
        # then the row is still held, and a pass skips it again)
        deadline = time.monotonic() + 10
        while (applied := runner.catch_up()) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # a poll of the row's lock, bounded by the deadline above
        assert applied == 1
        assert list(_archives(conn)) == ["held-1"]
    finally:
        other.close()
        runner.close()


async def test_many_ends_on_a_ladder_are_rated_by_one_update_of_that_ladder(
    store: EventStore,
    conn: psycopg.Connection,
    database_url: str,
    stop: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import workers.ratings

    busy, quiet = new_ladder(conn), new_ladder(conn)
    results = [("ann", "bob", 0), ("bob", "cat", None), ("cat", "ann", 1)] * 5
    for p0, p1, winner in results:
        await finish_match(store, busy, p0, p1, winner)
    await finish_match(store, quiet, "dan", "eve", 1)
    calls: list[str] = []
    real = workers.ratings.update_ladder

    def counted(ladder_id: str, **kwargs: Any) -> dict[str, Any]:
        calls.append(ladder_id)
        return real(ladder_id, **kwargs)

    monkeypatch.setattr(workers.ratings, "update_ladder", counted)
    runner = Runner(RatingsProjection(database_url), database_url, stop=stop)
    assert runner.catch_up() == 2
    assert sorted(calls) == sorted([busy, quiet])  # 16 ends, one update per ladder

    ratings: dict[str, float] = {}
    games: dict[str, int] = {}
    for p0, p1, winner in results:
        hand_elo(ratings, games, set(), p0, p1, 0.5 if winner is None else 1.0 - winner)
    rated = table(conn, busy)
    assert set(rated) == set(ratings)
    for player, rating in ratings.items():
        assert math.isclose(rated[player][0], rating, abs_tol=1e-9)
    assert runner_rows.positions(conn)["ratings"] == _head(conn)
    runner.close()


async def test_summaries_behind_their_events_are_redone_from_the_log(
    store: EventStore, conn: psycopg.Connection, database_url: str, stop: threading.Event
) -> None:
    # Appended without their summaries (as a crash after an admin event's append leaves them).
    for seed in range(2):
        await store_log(store, f"sum-{seed}", played_log(seed, f"sum-{seed}"))
    assert conn.execute("SELECT count(*) FROM match_summaries").fetchone()[0] == 0
    runner = Runner(SummariesProjection(), database_url, stop=stop)
    assert runner.catch_up() == 2
    for seed in range(2):
        row = conn.execute(
            "SELECT status, hand, winner, last_version FROM match_summaries WHERE match_id = %s",
            (f"sum-{seed}",),
        ).fetchone()
        events = conn.execute(
            "SELECT data::text FROM events WHERE match_id = %s ORDER BY version", (f"sum-{seed}",)
        ).fetchall()
        expected = summarise(decode_event(e[0]) for e in events)
        assert row == (expected.status, expected.hand, expected.winner, expected.last_version)
    assert runner.catch_up() == 0
    runner.close()


async def test_a_lost_hint_costs_a_poll_and_a_hint_wakes_the_runner_at_once(
    store: EventStore,
    conn: psycopg.Connection,
    database_url: str,
    redis_server_url: str,
    redis_prefix: str,
    stop: threading.Event,
) -> None:
    # No hint at all: the runner finds the end on its next poll.
    polling = Runner(
        ArchivesProjection(), database_url, stop=stop, poll_s=0.5, sweep_at_start=False
    )
    thread = start(polling)
    await store_log(store, "poll-1", played_log(21, "poll-1"))
    await asyncio.to_thread(_until, lambda: "poll-1" in _archives(conn), 15, "a polled build")
    stop.set()
    thread.join(10)
    assert not thread.is_alive()

    # A runner that would wait a minute without a hint gets one and builds at once.
    woken_stop = threading.Event()
    woken = Runner(
        ArchivesProjection(), database_url, stop=woken_stop, poll_s=60, sweep_at_start=False
    )
    listener = Listener(redis_server_url, redis_prefix, woken.wake.set, stop=woken_stop)
    threads = [start(woken), start_listener(listener)]
    try:
        await asyncio.to_thread(_until, listener.connected.is_set, 10, "the subscription")
        # its start and the subscription's wake-up are behind it: it waits a minute now
        await asyncio.to_thread(
            _until, lambda: woken.cycles >= 2 and not woken.wake.is_set(), 10, "the first catch-ups"
        )
        await store_log(store, "hint-1", played_log(22, "hint-1"))
        client = AsyncRedis.from_url(redis_server_url)
        try:
            await hint(client, redis_prefix, "hint-1")
        finally:
            await client.aclose()
        waited = await asyncio.to_thread(
            _until, lambda: "hint-1" in _archives(conn), 15, "a hinted build"
        )
        assert waited < 30  # far inside the minute it would otherwise wait
        assert listener.hints >= 1
    finally:
        woken_stop.set()
        for t in threads:
            t.join(10)


async def test_catching_up_everything_at_once_applies_each_projection(
    store: EventStore, conn: psycopg.Connection, database_url: str, redis: Redis
) -> None:
    ladder = new_ladder(conn)
    match_id = "all-1"
    await store_log(
        store, match_id, played_log(31, match_id, ladder_id=ladder, players=("ann", "bob"))
    )
    assert catch_up_all(database_url) == {
        "archives": 1,
        "ratings": 1,
        "summaries": 1,
        "flags": 1,
        "odds": 1,
    }
    assert match_id in _archives(conn)
    assert set(table(conn, ladder)) == {"ann", "bob"}
    assert catch_up_all(database_url) == {
        "archives": 0,
        "ratings": 0,
        "summaries": 0,
        "flags": 0,
        "odds": 0,
    }


async def test_an_archive_is_built_while_a_ratings_update_takes_its_time(
    store: EventStore,
    conn: psycopg.Connection,
    database_url: str,
    stop: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import workers.ratings

    ladder = new_ladder(conn)
    release = threading.Event()
    started = threading.Event()
    real = workers.ratings.update_ladder

    def slow(ladder_id: str, **kwargs: Any) -> dict[str, Any]:
        started.set()
        release.wait(30)  # a long recompute
        return real(ladder_id, **kwargs)

    monkeypatch.setattr(workers.ratings, "update_ladder", slow)
    ratings = Runner(
        RatingsProjection(database_url), database_url, stop=stop, poll_s=0.2, sweep_at_start=False
    )
    archives = Runner(
        ArchivesProjection(), database_url, stop=stop, poll_s=0.2, sweep_at_start=False
    )
    threads = [start(ratings), start(archives)]
    try:
        await store_log(
            store, "busy-1", played_log(41, "busy-1", ladder_id=ladder, players=("ann", "bob"))
        )
        await asyncio.to_thread(_until, started.is_set, 15, "the ratings update began")
        # Ratings are busy; the archive does not wait for them.
        await asyncio.to_thread(_until, lambda: "busy-1" in _archives(conn), 15, "the archive")
        assert not release.is_set() and table(conn, ladder) == {}
        release.set()
        await asyncio.to_thread(
            _until, lambda: set(table(conn, ladder)) == {"ann", "bob"}, 15, "the rating"
        )
    finally:
        release.set()
        stop.set()
        for t in threads:
            t.join(10)


async def test_an_event_that_commits_after_a_later_one_is_never_skipped(
    store: EventStore,
    conn: psycopg.Connection,
    database_url: str,
    admin_database_url: str,
    stop: threading.Event,
) -> None:
    from datetime import UTC, datetime

    from schemas.events import encode_event
    from service.store.chain import row_hash
    from service.store.events import APPEND_LOCK_KEY, event_type

    slow_log = played_log(51, "late-slow")
    await store_log(store, "late-slow", slow_log, upto=len(slow_log) - 1)
    head = conn.execute(
        "SELECT version, hash FROM events WHERE match_id = 'late-slow'"
        " ORDER BY version DESC LIMIT 1"
    ).fetchone()
    # An append in flight, as the store makes one: it holds the append lock shared
    # and has taken its position, but has not committed yet.
    late = psycopg.connect(admin_database_url)
    try:
        late.execute("SELECT pg_advisory_xact_lock_shared(%s)", (APPEND_LOCK_KEY,))
        at, event = datetime.now(UTC), slow_log[-1]
        late.execute(
            "INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash,"
            " hash) VALUES ('late-slow', %s, %s, %s, 'system', %s, %s, %s)",
            (
                head[0] + 1,
                event_type(event),
                encode_event(event).decode(),
                at,
                bytes(head[1]),
                row_hash(
                    bytes(head[1]),
                    match_id="late-slow",
                    version=head[0] + 1,
                    actor="system",
                    recorded_at=at,
                    event_bytes=encode_event(event),
                ),
            ),
        )
        # A later match ends and commits first, at a higher position.
        await store_log(store, "late-fast", played_log(52, "late-fast"))
        runner = Runner(ArchivesProjection(), database_url, stop=stop)
        passing = threading.Thread(target=runner.catch_up)
        passing.start()
        # The pass waits for the append in flight instead of applying past it.
        deadline = time.monotonic() + 10
        while not _waiting_for_a_lock(conn):
            assert time.monotonic() < deadline, "the pass never waited at the barrier"
            assert passing.is_alive(), "the pass ended without waiting for the append"
            await asyncio.sleep(0.02)
        assert passing.is_alive() and _archives(conn) == {}
        late.commit()
        passing.join(20)
        assert not passing.is_alive()
        assert sorted(_archives(conn)) == ["late-fast", "late-slow"]
        assert runner_rows.positions(conn)["archives"] == _head(conn)
        runner.close()
    finally:
        late.close()
