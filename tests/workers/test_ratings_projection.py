"""The ratings projection on a real PostgreSQL event store, run by a real RQ
worker on a real Redis queue: hand-computed Elo, annulments, idempotence,
recompute == incremental, and per-ladder ordering."""

from __future__ import annotations

import math
import threading
import time

import psycopg
import pytest
from redis import Redis
from rq import SimpleWorker
from workers_harness import (
    annul,
    finish_match,
    hand_elo,
    histories,
    insert_result,
    new_ladder,
    table,
)

from service.broker.jobs import enqueue_ladder_update, queues
from service.store import EventStore
from workers.ratings import apply_ladder

pytestmark = pytest.mark.anyio


def run_worker(redis: Redis, prefix: str) -> None:
    """A real RQ worker, in this process, until the test's queues are empty."""
    SimpleWorker(queues(redis=redis, prefix=prefix), connection=redis).work(burst=True)


def assert_ratings(conn: psycopg.Connection, ladder_id: str, expected: dict[str, float]) -> None:
    stored = table(conn, ladder_id)
    assert set(stored) == set(expected)
    for player, rating in expected.items():
        assert math.isclose(stored[player][0], rating, abs_tol=1e-9), (player, stored[player])


async def test_ratings_after_known_results_equal_hand_computed_elo_with_k_changes(
    store: EventStore, conn: psycopg.Connection, redis: Redis, redis_prefix: str
) -> None:
    # A strong start so that ann crosses 2400 (K 10, sticky) and 30 games (K 40 -> 20).
    ladder_id = new_ladder(conn, {"initial": 2300})
    results = []
    for i in range(34):
        opponent = f"bob{i % 3}"
        # ann wins most, draws every 7th, loses every 5th: she rises past 2400 and dips back
        winner = None if i % 7 == 6 else (1 if i % 5 == 4 else 0)
        results.append(("ann", opponent, winner))
    results.append(("bob0", "bob1", 1))
    for p0, p1, winner in results:
        await finish_match(store, ladder_id, p0, p1, winner)
    enqueue_ladder_update(ladder_id, redis=redis, prefix=redis_prefix)
    run_worker(redis, redis_prefix)

    ratings: dict[str, float] = {}
    games: dict[str, int] = {}
    reached: set[str] = set()
    for p0, p1, winner in results:
        score = 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
        hand_elo(ratings, games, reached, p0, p1, score, initial=2300.0)
    assert "ann" in reached and games["ann"] > 30  # the test covers both K changes
    assert_ratings(conn, ladder_id, ratings)
    ann = table(conn, ladder_id)["ann"]
    assert ann[1:5] == (
        34,
        sum(1 for r in results if r[0] == "ann" and r[2] == 0),
        sum(1 for r in results if r[0] == "ann" and r[2] is None),
        sum(1 for r in results if r[0] == "ann" and r[2] == 1),
    )
    assert ann[6] is True and ann[7] is False  # reached master, no longer provisional
    assert table(conn, ladder_id)["bob2"][7] is True  # 11 games: provisional


async def test_an_annulment_removes_that_match_from_every_later_rating(
    store: EventStore, conn: psycopg.Connection, redis: Redis, redis_prefix: str
) -> None:
    ladder_id = new_ladder(conn)
    played = []
    for i in range(12):
        p0, p1 = ("ann", "bob") if i % 2 else ("cat", "ann")
        if i % 3 == 0:
            p1 = "dan"
        winner = (0, 1, None)[i % 3]
        played.append((await finish_match(store, ladder_id, p0, p1, winner), p0, p1, winner))
    enqueue_ladder_update(ladder_id, redis=redis, prefix=redis_prefix)
    run_worker(redis, redis_prefix)
    before = table(conn, ladder_id)

    await annul(store, played[3][0])
    enqueue_ladder_update(ladder_id, redis=redis, prefix=redis_prefix)
    run_worker(redis, redis_prefix)

    ratings: dict[str, float] = {}
    games: dict[str, int] = {}
    for k, (_, p0, p1, winner) in enumerate(played):
        if k == 3:
            continue
        score = 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
        hand_elo(ratings, games, set(), p0, p1, score)
    assert_ratings(conn, ladder_id, ratings)
    assert table(conn, ladder_id) != before
    history = histories(conn, ladder_id)
    annulled_position = conn.execute(
        "SELECT position FROM events WHERE match_id = %s AND type = 'match_ended'",
        (played[3][0],),
    ).fetchone()[0]
    assert all(annulled_position not in h[0] for h in history.values())
    assert sum(len(h[0]) for h in history.values()) == 2 * 11


@pytest.mark.parametrize("scan", ["by match", "every ladder", "every ladder, two connections"])
async def test_incremental_updates_equal_a_recompute_from_scratch(
    store: EventStore, conn: psycopg.Connection, scan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A recompute finds a small ladder's results match by match, a big one's by
    # scanning every match_ended event (on the job's connection while a second
    # one reads the ladder's matches, as the worker runs it): all must give the
    # same table.
    if scan != "by match":
        monkeypatch.setattr("workers.ratings.reads.SMALL_LADDER", 0)
        monkeypatch.setattr("workers.ratings.reads.ENDED_CHUNK_ROWS", 7)  # many chunks
    reader = None
    if scan == "every ladder, two connections":
        reader = psycopg.connect(conn.info.dsn, autocommit=True)
    ladder_id = new_ladder(conn, {"initial": 2350, "established_after_games": 4})
    other = new_ladder(conn)
    players = ["a", "b", "c", "d", "e"]
    modes = []
    for i in range(40):
        p0, p1 = players[i % 5], players[(i * 3 + 1) % 5]
        if p0 == p1:
            p1 = players[(i + 2) % 5]
        await finish_match(store, ladder_id, p0, p1, (0, 1, None, 0)[i % 4])
        await finish_match(store, other, p1, p0, 0)  # another ladder, interleaved
        if i % 6 == 5:
            modes.append(apply_ladder(conn, ladder_id)["mode"])
    modes.append(apply_ladder(conn, ladder_id)["mode"])
    assert modes[0] == "full" and set(modes[1:]) == {"incremental"}
    incremental = (table(conn, ladder_id), histories(conn, ladder_id))
    assert sum(t[1] for t in incremental[0].values()) == 80

    result = apply_ladder(conn, ladder_id, full=True, reader=reader)
    assert result["mode"] == "full" and result["matches"] == 40
    assert (table(conn, ladder_id), histories(conn, ladder_id)) == incremental
    if reader is not None:
        reader.close()


async def test_a_match_against_oneself_in_the_log_is_recomputed_like_the_increments(
    store: EventStore, conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The API refuses such a match; the fast recompute hands one in the log to
    # elo.EloRatings (what the increments run), so the two still agree.
    monkeypatch.setattr("workers.ratings.reads.SMALL_LADDER", 0)
    ladder_id = new_ladder(conn, {"established_after_games": 3})
    for p0, p1, w in [("a", "b", 0), ("b", "c", None), ("a", "c", 1)]:
        await finish_match(store, ladder_id, p0, p1, w)
    assert apply_ladder(conn, ladder_id)["mode"] == "full"
    for p0, p1, w in [("a", "a", 0), ("c", "a", 1), ("b", "a", None)]:
        await finish_match(store, ladder_id, p0, p1, w)
    assert apply_ladder(conn, ladder_id)["mode"] == "incremental"
    incremental = (table(conn, ladder_id), histories(conn, ladder_id))
    assert incremental[0]["a"][1] == 6  # the match against herself counts twice
    assert apply_ladder(conn, ladder_id, full=True)["matches"] == 6
    assert (table(conn, ladder_id), histories(conn, ladder_id)) == incremental


async def test_running_a_job_twice_changes_nothing(
    store: EventStore, conn: psycopg.Connection, redis: Redis, redis_prefix: str
) -> None:
    ladder_id = new_ladder(conn)
    for i in range(5):
        await finish_match(store, ladder_id, "ann", f"opp{i}", i % 2)
    first = enqueue_ladder_update(ladder_id, redis=redis, prefix=redis_prefix)
    run_worker(redis, redis_prefix)
    snapshot = (table(conn, ladder_id), histories(conn, ladder_id))
    position = conn.execute(
        "SELECT position FROM ladder_projections WHERE ladder_id = %s", (ladder_id,)
    ).fetchone()

    again = enqueue_ladder_update(ladder_id, redis=redis, prefix=redis_prefix)
    run_worker(redis, redis_prefix)
    assert first.return_value()["matches"] == 5
    assert again.return_value()["mode"] == "none"
    assert (table(conn, ladder_id), histories(conn, ladder_id)) == snapshot
    assert (
        conn.execute(
            "SELECT position FROM ladder_projections WHERE ladder_id = %s", (ladder_id,)
        ).fetchone()
        == position
    )


async def test_two_jobs_of_one_ladder_never_interleave(
    store: EventStore, conn: psycopg.Connection, database_url: str
) -> None:
    ladder_id = new_ladder(conn)
    await finish_match(store, ladder_id, "ann", "bob", 0)
    # A first job holds the ladder's lock (it pauses before committing) ...
    first_result: dict = {}

    def first() -> None:
        with psycopg.connect(database_url, autocommit=True) as c:
            first_result.update(apply_ladder(c, ladder_id, pause_s=1.5))

    runner = threading.Thread(target=first)
    runner.start()
    deadline = time.monotonic() + 10
    # The first job holds this ladder's lock (a 64-bit advisory key: pg_locks shows
    # its high and low halves), not merely some other lock on its way there.
    while not conn.execute(
        "SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted"
        " AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database"
        "   WHERE datname = current_database())"
        " AND ((l.classid::bigint << 32) | l.objid::bigint)"
        "   = hashtextextended('matcha.ladder-ratings.' || %s, 0)",
        (ladder_id,),
    ).fetchone():
        assert time.monotonic() < deadline, "the first job never took the ladder's lock"
        assert runner.is_alive(), "the first job ended before it was seen holding the lock"
        time.sleep(0.02)
    # ... so a second one waits for it, then finds nothing new to apply.
    started = time.monotonic()
    second = apply_ladder(conn, ladder_id)
    waited = time.monotonic() - started
    runner.join()
    assert first_result["mode"] == "full" and first_result["matches"] == 1
    assert second["mode"] == "none"
    assert waited > 0.5
    assert table(conn, ladder_id)["ann"][1] == 1  # rated once, not twice


def test_a_chunked_read_hands_its_errors_over_and_stops_when_dropped(
    conn: psycopg.Connection,
) -> None:
    from workers.ratings.reads import read_chunks as _read

    with pytest.raises(psycopg.errors.UndefinedColumn):
        list(_read(conn.cursor(), "SELECT no_such_column, %(after)s", {}))
    chunks = _read(
        conn.cursor(),
        "SELECT max(g), string_agg(g::text, ','), sum(g)"
        " FROM (SELECT g FROM generate_series(1, 5) g WHERE g > %(after)s ORDER BY g LIMIT 2) c",
        {},
    )
    assert next(chunks) == ("1,2", 3)
    assert next(chunks) == ("3,4", 7)
    chunks.close()  # the reading thread stops; the connection is usable again
    assert conn.execute("SELECT 1").fetchone() == (1,)
    whole = _read(
        conn.cursor(),
        "SELECT max(g), string_agg(g::text, ',') FROM generate_series(1, 3) g WHERE g > %(after)s",
        {},
    )
    assert list(whole) == [("1,2,3",)]  # keyset paging ends on an empty chunk


def test_results_are_put_in_position_order_and_a_bad_winner_is_refused() -> None:
    import struct

    from workers.ratings.reads import in_order as _in_order

    def tags(*values: int) -> bytes:
        return b"".join(struct.pack(">q", v) for v in values)

    ordered = _in_order("a\tb\tc", tags(256 + 2, 512 + 1, 768 + 0))
    assert ordered == (["a", "b", "c"], [258, 513, 768], bytes([2, 1, 0]), None)
    # were PostgreSQL ever to aggregate out of order, the chunk is sorted
    assert _in_order("b\tc\ta", tags(513, 768, 258)) == ordered
    with pytest.raises(ValueError, match="winner"):
        _in_order("a\tb", tags(258))  # one match had no valid winner: no tag


def glicko_state(conn: psycopg.Connection, ladder_id: str) -> dict[str, tuple[object, ...]]:
    return {
        r[0]: tuple(v.hex() if isinstance(v, float) else v for v in r[1:])
        for r in conn.execute(
            "SELECT player_id, rating, rd, volatility, games, wins, draws, losses, timeouts,"
            " peak, provisional, period, period_open, base_rating, base_rd, base_volatility,"
            " base_period, v_sum, d_sum, period_games FROM ratings WHERE ladder_id = %s",
            (ladder_id,),
        ).fetchall()
    }


def glicko_histories(conn: psycopg.Connection, ladder_id: str) -> dict[str, object]:
    def hexed(values: list[float]) -> list[str]:
        return [v.hex() for v in values]

    return {
        r[0]: (r[1], hexed(r[2]), hexed(r[3]), r[4], hexed(r[5]), hexed(r[6]), r[7])
        for r in conn.execute(
            "SELECT player_id, positions, before, after, scores, rd_before, rd_after, periods"
            " FROM rating_histories WHERE ladder_id = %s",
            (ladder_id,),
        ).fetchall()
    }


@pytest.mark.parametrize("scan", ["by match", "every ladder, two connections"])
def test_a_glicko2_ladder_recomputed_from_the_log_equals_its_increments_bit_for_bit(
    conn: psycopg.Connection, scan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime, timedelta

    if scan != "by match":
        monkeypatch.setattr("workers.ratings.reads.SMALL_LADDER", 0)
        monkeypatch.setattr("workers.ratings.reads.ENDED_CHUNK_ROWS", 5)
    reader = psycopg.connect(conn.info.dsn, autocommit=True) if scan != "by match" else None
    ladder_id = new_ladder(conn, {"system": "glicko2", "rating_period_s": 3600})
    other = new_ladder(conn)
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    players = ["a", "b", "c", "d", "e", "f"]
    modes = []
    aborted = timed_out = 0
    for i in range(45):
        p0, p1 = players[i % 6], players[(i * 5 + 2) % 6]
        if p0 == p1:
            p1 = players[(i + 1) % 6]
        # three games an hour mostly, with gaps of idle hours; now and then the
        # clock of a late commit goes back (the period never does)
        at = start + timedelta(minutes=20 * i + (300 if i > 30 else 0) - (25 if i % 9 == 8 else 0))
        reason = "aborted" if i % 11 == 10 else ("timeout" if i % 7 == 3 else None)
        aborted += reason == "aborted"
        timed_out += reason == "timeout"
        insert_result(
            conn,
            ladder_id,
            p0,
            p1,
            None if reason == "aborted" else (0, 1, None, 1)[i % 4] if reason is None else i % 2,
            at,
            reason=reason,
        )
        insert_result(conn, other, p1, p0, 0, at)
        if i % 5 == 4:
            modes.append(apply_ladder(conn, ladder_id)["mode"])
    assert modes[0] == "full" and set(modes[1:]) == {"incremental"}
    incremental = (glicko_state(conn, ladder_id), glicko_histories(conn, ladder_id))
    assert sum(row[3] for row in incremental[0].values()) == 2 * (45 - aborted)
    assert sum(row[7] for row in incremental[0].values()) == timed_out
    assert len({p for h in incremental[1].values() for p in h[6]}) > 5  # many periods

    result = apply_ladder(conn, ladder_id, full=True, reader=reader)
    assert result["mode"] == "full" and result["matches"] == 45 - aborted
    assert (glicko_state(conn, ladder_id), glicko_histories(conn, ladder_id)) == incremental
    if reader is not None:
        reader.close()
