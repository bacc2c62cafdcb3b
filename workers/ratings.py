"""The ratings projection: a ladder's Elo table, folded from the event log.

``update_ladder(ladder_id)`` is the RQ job. It applies the match_ended events
of the ladder's matches in committed global order, skipping annulled matches,
and records the last global position it applied in ``ladder_projections`` in
the same transaction as the ratings (so a job that runs twice changes nothing
the second time). Two cases:

* only new results since the recorded position: rate them on top of the
  stored table (incremental, a few rows);
* an annulment of one of the ladder's matches arrived, or a full recompute was
  asked for: rebuild the whole ladder from its log. An annulment changes every
  later rating of everyone who met, directly or not, a player of that match;
  replaying the ladder without it is the simplest way to be exactly right.

The increments run ``workers.elo.Ladder.rate``; the full recompute runs
``rate_chunks``, the same arithmetic in the same order, so a recompute from
scratch gives bit-for-bit the incremental result (tested against each other
and against ``elo.Ladder``).

The full recompute is built for speed (docs/ratings.md, bench/bench_workers.py):
chunked reads of the ladder's match_created rows and of every match_ended row
in position order, two PostgreSQL backends at once; a tight loop over lists
indexed by player number that appends each new rating to the player's array;
the history laid out in COPY's binary format from those arrays' bytes.
"""

from __future__ import annotations

import gc
import logging
import queue
import struct
import sys
import threading
import time
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from itertools import compress, count, islice
from operator import add, eq, lt
from typing import Any, NamedTuple

import psycopg
from psycopg.copy import QueuedLibpqWriter

from service.evidence.guard import forged_results
from workers import db
from workers.elo import EloSettings, Ladder, PlayerRating, settings_from_json

log = logging.getLogger("matcha.workers.ratings")

PROGRESS_EVERY = 50_000
"""Matches between two progress reports in the job's meta (a multiple of CHUNK)."""

_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('matcha.ladder-ratings.' || %s, 0))"

_NEW_RESULTS = """
SELECT e.position, e.match_id, c.data -> 'players' ->> 0, c.data -> 'players' ->> 1,
       e.data ->> 'winner'
FROM events e
JOIN events c ON c.match_id = e.match_id AND c.version = 1 AND c.type = 'match_created'
WHERE e.type = 'match_ended' AND e.position > %(after)s AND e.position <= %(high)s
  AND c.data ->> 'ladder_id' = %(ladder)s
  AND NOT EXISTS (
      SELECT 1 FROM events a
      WHERE a.match_id = e.match_id AND a.type = 'match_annulled' AND a.position <= %(high)s)
ORDER BY e.position
"""

_NEW_ANNULMENTS = """
SELECT 1
FROM events a
JOIN events c ON c.match_id = a.match_id AND c.version = 1 AND c.type = 'match_created'
WHERE a.type = 'match_annulled' AND a.position > %(after)s AND a.position <= %(high)s
  AND c.data ->> 'ladder_id' = %(ladder)s
LIMIT 1
"""

# The full recompute's reads. PostgreSQL extracts only the fields the Elo
# needs and ships a whole chunk in one row: text fields joined by tabs in ONE
# string (Python splits it once, in C, and takes the columns with strided
# slices: no message and no split per row; ids are generated, no tab in them),
# numbers as one bytea of 8-byte big-endian integers (an array('q') at once).
# Big reads come in chunks (keyset paging on the position) that a thread
# fetches while Python works on the previous one. The ladder's matches may come
# in any order within a chunk (they are only numbered): no sort for them.
_CREATED_CHUNK = """
SELECT max(position), string_agg(match_id || E'\\t' || p0 || E'\\t' || p1, E'\\t')
FROM (SELECT position, match_id, data -> 'players' ->> 0 AS p0, data -> 'players' ->> 1 AS p1
      FROM events
      WHERE type = 'match_created' AND data ->> 'ladder_id' = %(ladder)s
        AND position > %(after)s AND position <= %(high)s
        AND match_id <> ALL(%(annulled)s)
      ORDER BY data ->> 'ladder_id', position
      LIMIT %(rows)s) AS chunk
"""
# A result is its match id and its *tag*: position * 256 + seat 0's code (2
# win, 1 draw, 0 loss; see rate_chunks). A winner that is none of 0, 1 or null
# gives no tag (string_agg skips NULL): the chunk's counts differ and Python
# refuses it. (A position of 2 ** 55 or more overflows the bigint: an error,
# never a wrong tag.) The aggregates take the rows in the subquery's order, the
# position's; Python checks that (``_in_order``) rather than paying for a sort.
_TAG = """position * 256 + CASE coalesce(data ->> 'winner', 'D')
                                 WHEN '0' THEN 2 WHEN 'D' THEN 1 WHEN '1' THEN 0 END"""
# The bounds are row comparisons on (type, position), which say exactly "type
# match_ended, position in (after, high]" and which only events_type_position_idx
# can serve: when results are a large share of the events, the planner would
# otherwise walk the primary key and filter on the type, and a chunk after a
# long stretch of other events would read them all first.
_ENDED_CHUNK = f"""
SELECT max(position), string_agg(match_id, E'\\t'), string_agg(int8send(tag), '')
FROM (SELECT position, match_id, {_TAG} AS tag
      FROM events
      WHERE (type, position) > ('match_ended', %(after)s)
        AND (type, position) <= ('match_ended', %(high)s)
      ORDER BY type, position
      LIMIT %(rows)s) AS chunk
"""
_ENDED_OF = f"""
SELECT NULL, string_agg(match_id, E'\\t'), string_agg(int8send(tag), '')
FROM (SELECT position, match_id, {_TAG} AS tag
      FROM events
      WHERE match_id = ANY(%(matches)s) AND type = 'match_ended' AND position <= %(high)s
      ORDER BY position) AS ended
"""
_LADDER_SIZE_UP_TO = """
SELECT count(*) FROM (
    SELECT 1 FROM events
    WHERE type = 'match_created' AND data ->> 'ladder_id' = %(ladder)s AND position <= %(high)s
    LIMIT %(limit)s) AS probe
"""
_ANNULLED = """
SELECT coalesce(array_agg(match_id), '{}') FROM events
WHERE type = 'match_annulled' AND position <= %(high)s
"""
ENDED_CHUNK_ROWS = 50_000
"""match_ended rows per read of a big recompute."""

SMALL_LADDER = 20_000
"""Up to this many matches, a recompute looks the ladder's match_ended events up
by match (the (match_id, version) index) instead of scanning every ladder's."""

_SCORE_OF_CODE = (0.0, 0.5, 1.0)
"""A seat's score from its code (0 loss, 1 draw, 2 win)."""
_FLIP_OF_CODE = (2, 0, -2)
"""Seat 1's tag minus seat 0's, by seat 0's code (seat 1's code is 2 minus it)."""

Progress = Callable[[str, int, int], None]


def _job_progress() -> Progress:
    """Report progress in the running RQ job's meta (a no-op outside a job)."""
    from rq import get_current_job

    job = get_current_job()
    if job is None:
        return lambda phase, done, total: None

    def report(phase: str, done: int, total: int) -> None:
        job.meta["progress"] = {"phase": phase, "done": done, "total": total}
        job.save_meta()  # type: ignore[no-untyped-call]

    return report


def update_ladder(
    ladder_id: str,
    *,
    full: bool = False,
    pause_s: float = 0.0,
    database_url: str | None = None,
) -> dict[str, Any]:
    """The RQ job: bring a ladder's ratings up to the committed end of the log.

    ``full`` rebuilds from scratch even when nothing new happened (the admin
    recompute). ``pause_s`` holds the transaction open before committing: a
    test knob to kill a worker in the middle of a job.
    """
    conn = db.connection(database_url)
    reader = db.connection(database_url, purpose="reader")
    return apply_ladder(
        conn, ladder_id, full=full, pause_s=pause_s, progress=_job_progress(), reader=reader
    )


def apply_ladder(
    conn: psycopg.Connection,
    ladder_id: str,
    *,
    full: bool = False,
    pause_s: float = 0.0,
    progress: Progress | None = None,
    reader: psycopg.Connection | None = None,
) -> dict[str, Any]:
    """Update one ladder on ``conn``; a full recompute streams the log from ``reader``.

    The reader is a second connection, so the log streams out of one backend
    while the job's transaction (its lock, the deleted rows) stays open in the
    other. It needs no snapshot shared with ``conn``: it reads only positions
    at or below the committed high-water mark, and those rows are final.
    """
    report = progress or (lambda phase, done, total: None)
    started = time.perf_counter()
    high = db.committed_high(conn)
    with conn.transaction():
        # Two jobs of one ladder must never interleave: both would start from
        # the same recorded position and write the same history rows (or a
        # recompute would delete what an incremental job is adding). The lock
        # is keyed by the ladder, so different ladders still run side by side,
        # and it is transaction-scoped: a worker that dies mid-job drops its
        # connection, PostgreSQL rolls the transaction back and frees the lock.
        conn.execute(_LOCK_SQL, (ladder_id,))
        row = conn.execute("SELECT rating FROM ladders WHERE id = %s", (ladder_id,)).fetchone()
        settings = settings_from_json(row[0] if row else None)
        row = conn.execute(
            "SELECT position FROM ladder_projections WHERE ladder_id = %s", (ladder_id,)
        ).fetchone()
        after = int(row[0]) if row else 0
        if high <= after and not full:
            return {"ladder_id": ladder_id, "mode": "none", "position": after, "matches": 0}
        params = {"after": after, "high": high, "ladder": ladder_id}
        annulled = conn.execute(_NEW_ANNULMENTS, params).fetchone() is not None
        if full or annulled or after == 0:
            mode = "full"
            # The recompute holds millions of small tuples and lists, none in
            # a cycle; the cyclic collector would rescan them all again and
            # again (it once tripled the run time), so it rests meanwhile.
            gc_was_on = gc.isenabled()
            gc.disable()
            # each chunk of results is sorted in memory, not on disk
            conn.execute("SET LOCAL work_mem = '32MB'")
            try:
                matches = _recompute(conn, reader or conn, ladder_id, settings, high, report)
            finally:
                if gc_was_on:
                    gc.enable()
        else:
            mode = "incremental"
            matches = _increment(conn, ladder_id, settings, params)
        conn.execute(
            """INSERT INTO ladder_projections (ladder_id, position, matches, recomputed_at)
               VALUES (%(ladder)s, %(high)s, %(matches)s,
                       CASE WHEN %(full)s THEN now() END)
               ON CONFLICT (ladder_id) DO UPDATE SET
                   position = excluded.position,
                   matches = CASE WHEN %(full)s THEN excluded.matches
                                  ELSE ladder_projections.matches + excluded.matches END,
                   recomputed_at = coalesce(excluded.recomputed_at,
                                            ladder_projections.recomputed_at),
                   updated_at = now()""",
            {"ladder": ladder_id, "high": high, "matches": matches, "full": mode == "full"},
        )
        if pause_s:
            time.sleep(pause_s)
    elapsed = time.perf_counter() - started
    report("done", matches, matches)
    log.info("ladder %s: %s update, %d matches in %.3fs", ladder_id, mode, matches, elapsed)
    return {"ladder_id": ladder_id, "mode": mode, "position": high, "matches": matches,
            "seconds": elapsed}


# -- incremental -----------------------------------------------------------------------


def _increment(
    conn: psycopg.Connection, ladder_id: str, settings: Any, params: dict[str, Any]
) -> int:
    results = conn.execute(_NEW_RESULTS, params).fetchall()
    forged = set(forged_results(conn.cursor(), ladder_id, params["high"], after=params["after"]))
    results = [r for r in results if r[1] not in forged]
    if not results:
        return 0
    involved = sorted({p for r in results for p in (r[2], r[3])})
    stored = conn.execute(
        """SELECT player_id, rating, games, wins, draws, losses, peak, reached_master, provisional
           FROM ratings WHERE ladder_id = %s AND player_id = ANY(%s)""",
        (ladder_id, involved),
    ).fetchall()
    ladder = Ladder(
        settings,
        [
            PlayerRating(player_id=r[0], rating=r[1], games=r[2], wins=r[3], draws=r[4],
                         losses=r[5], peak=r[6], reached_master=r[7], provisional=r[8])
            for r in stored
        ],
    )
    for position, match_id, p0, p1, winner in results:
        score0 = 0.5 if winner is None else (1.0 if winner == "0" else 0.0)
        ladder.rate(match_id, position, p0, p1, score0)
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO ratings (ladder_id, player_id, rating, games, wins, draws, losses,
                                    peak, reached_master, provisional)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (ladder_id, player_id) DO UPDATE SET
                   rating = excluded.rating, games = excluded.games, wins = excluded.wins,
                   draws = excluded.draws, losses = excluded.losses, peak = excluded.peak,
                   reached_master = excluded.reached_master,
                   provisional = excluded.provisional""",
            [
                (ladder_id, p.player_id, p.rating, p.games, p.wins, p.draws, p.losses, p.peak,
                 p.reached_master, p.provisional)
                for p in ladder.table()
            ],
        )
        entries: dict[str, list[Any]] = {}
        for player, _match, position, _opp, score, before, after, _change in ladder.history:
            entries.setdefault(player, []).append((position, before, after, score))
        cur.executemany(
            """INSERT INTO rating_histories AS h (ladder_id, player_id, positions, before,
                                                  after, scores)
               VALUES (%s, %s, %s, %s, %s, %s)
               ON CONFLICT (ladder_id, player_id) DO UPDATE SET
                   positions = h.positions || excluded.positions,
                   before = h.before || excluded.before,
                   after = h.after || excluded.after,
                   scores = h.scores || excluded.scores""",
            [
                (ladder_id, player, [e[0] for e in rows], [e[1] for e in rows],
                 [e[2] for e in rows], [e[3] for e in rows])
                for player, rows in entries.items()
            ],
        )
    return len(results)


# -- full recompute --------------------------------------------------------------------

Chunk = tuple[list[int], list[int], list[float], list[int], list[int]]
"""One block of results in order: seat 0's player index, seat 1's, seat 0's score,
and each seat's tag (see ``rate_chunks``)."""


class Roster(dict[Any, int]):
    """Player id -> a small integer index, numbering new players as they come.

    The hot loop then keeps each player's state in flat lists indexed by that
    integer (a list subscript is far cheaper than hashing an id), and the ids
    are mapped in C with ``map(roster.__getitem__, ids)`` once per chunk.
    """

    def __missing__(self, player_id: Any) -> int:
        index = self[player_id] = len(self)
        return index


class SelfMatchError(ValueError):
    """A match with one player in both seats: ``rate_chunks`` leaves it to ``Ladder``."""


class Fold(NamedTuple):
    """What ``rate_chunks`` leaves, per player index (their entries in match order)."""

    rating: list[float]
    afters: list[array[float]]
    """The player's rating after each of their matches."""
    tags: list[array[int]]
    """Each of their matches as ``position * 256 + code`` (code 2 win, 1 draw, 0 loss)."""


def _recompute(
    conn: psycopg.Connection,
    reader: psycopg.Connection,
    ladder_id: str,
    settings: EloSettings,
    high: int,
    report: Progress,
) -> int:
    rcur = reader.cursor()
    params: dict[str, Any] = {"ladder": ladder_id, "high": high, "rows": ENDED_CHUNK_ROWS}
    params["annulled"] = rcur.execute(_ANNULLED, params).fetchone()[0]  # type: ignore[index]
    # results no service signature covers (a clone, a forged end) count as annulled
    params["annulled"] += forged_results(rcur, ladder_id, high)
    # A big ladder scans every match_ended row: that read starts now, on the
    # job's own connection (idle until the write), side by side with the
    # match_created read on the reader, so two PostgreSQL backends work at
    # once. Its chunks wait in memory until the seats are known.
    ended = None
    if reader is not conn:
        probe = {**params, "limit": SMALL_LADDER + 1}
        if rcur.execute(_LADDER_SIZE_UP_TO, probe).fetchone()[0] > SMALL_LADDER:  # type: ignore[index]
            ended = _read(conn.cursor(binary=True), _ENDED_CHUNK, params, ahead=0,
                          parse=_in_order)

    # 1. The ladder's matches, annulled ones left out: match id -> its number,
    #    number -> each seat's player index (so a chunk of results maps in C).
    roster = Roster()
    index = roster.__getitem__
    number_of: dict[str, int] = {}  # match id -> its number in these lists
    seat0_of: list[int] = []
    seat1_of: list[int] = []
    for (text,) in _read(rcur, _CREATED_CHUNK, params):
        fields = text.split("\t")
        number_of.update(zip(fields[0::3], count(len(seat0_of))))
        seat0_of += map(index, fields[1::3])
        seat1_of += map(index, fields[2::3])
    total = len(number_of)
    report("rating", 0, total)

    # 2. Every result in committed order. A small ladder's are looked up by
    #    match; a big one's come from scanning every match_ended event, and
    #    other ladders' matches (not in the seats) are dropped here.
    bcur = reader.cursor(binary=True)
    if ended is not None:
        results = ended
    elif total <= SMALL_LADDER:
        results = _read(bcur, _ENDED_OF, {**params, "matches": list(number_of)}, once=True,
                        parse=_in_order)
    else:
        results = _read(bcur, _ENDED_CHUNK, params, parse=_in_order)
    rated_so_far = [0]

    def chunks() -> Generator[Chunk, None, None]:
        for ids, tags0, codes in results:
            numbers = list(map(number_of.get, ids))
            if None in numbers:  # another ladder's matches, or annulled ones
                mine = [k is not None for k in numbers]
                numbers = list(compress(numbers, mine))
                tags0 = list(compress(tags0, mine))
                codes = bytes(compress(codes, mine))
            yield (list(map(seat0_of.__getitem__, numbers)),  # type: ignore[arg-type]
                   list(map(seat1_of.__getitem__, numbers)),  # type: ignore[arg-type]
                   list(map(_SCORE_OF_CODE.__getitem__, codes)),
                   tags0, list(map(add, tags0, map(_FLIP_OF_CODE.__getitem__, codes))))
            before = rated_so_far[0]
            rated_so_far[0] += len(numbers)
            if rated_so_far[0] // PROGRESS_EVERY != before // PROGRESS_EVERY:
                report("rating", rated_so_far[0], total)

    stream = chunks()
    try:
        fold: Fold | None = rate_chunks(stream, len(roster), settings)
    except SelfMatchError:
        fold = None
    finally:
        stream.close()
        results.close()  # every read is over: the job's connection is free
    wcur = conn.cursor()
    wcur.execute("DELETE FROM rating_histories WHERE ladder_id = %s", (ladder_id,))
    wcur.execute("DELETE FROM ratings WHERE ladder_id = %s", (ladder_id,))
    if fold is None:
        # Not possible through the API; the log may still hold one. The
        # reference implementation rates it (slowly) from the same log.
        log.warning("ladder %s: a match against oneself; recomputing with elo.Ladder", ladder_id)
        return _increment(conn, ladder_id, settings, {**params, "after": 0})
    report("writing", rated_so_far[0], rated_so_far[0])
    _write(wcur, ladder_id, list(roster), fold, settings)
    return rated_so_far[0]


def rate_chunks(chunks: Iterable[Chunk], players: int, settings: EloSettings) -> Fold:
    """Rate blocks of results in order: the hot loop of a recompute.

    Does exactly the arithmetic of ``elo.Ladder.rate`` (same operations, same
    order: same bits) for players numbered ``0 .. players - 1``, keeping in the
    loop only what the Elo needs, in flat lists indexed by player: ratings, K,
    the master mark. Per match the loop appends each player's new rating to
    their ``afters`` array; everything else needs no Python step per match:

    * a seat's *tag* is ``position * 256 + code`` (code 2 win, 1 draw, 0
      loss), one integer that is both what the history needs and its order.
      Each chunk's tags are appended to the players' ``tags`` arrays with
      ``map`` (C) before the chunk is rated;
    * from those, the match where a player plays their ``new_player_games``-th
      game: the loop runs in segments between such matches and changes that
      player's K in between, so it never counts games;
    * wins, draws, losses, peak and the whole history come out of the arrays
      afterwards (``_write``).

    A match with one player in both seats raises ``SelfMatchError`` (the
    history's "before" would not be the previous "after").
    """
    s = settings
    initial, cap, n_new = s.initial, s.max_difference, s.new_player_games
    ncap = -cap
    k_new, k_est, k_master, master = s.k_new, s.k, s.k_master, s.master_rating
    start_master = initial >= master
    rating = [initial] * players
    k_of = [k_new if n_new > 0 else (k_master if start_master else k_est)] * players
    is_master = [start_master] * players
    afters = [array("d") for _ in range(players)]
    tags_of = [array("q") for _ in range(players)]
    new = list(range(players)) if n_new > 0 else []  # players still on K k_new
    consume = deque[None](maxlen=0).extend
    append = [a.append for a in afters]
    for seat0, seat1, scores, tags0, tags1 in chunks:
        n = len(scores)
        if any(map(eq, seat0, seat1)):
            raise SelfMatchError("a match with the same player in both seats")
        seats = [0] * (2 * n)
        seats[0::2] = seat0
        seats[1::2] = seat1
        tags = [0] * (2 * n)
        tags[0::2] = tags0
        tags[1::2] = tags1
        consume(map(array.append, map(tags_of.__getitem__, seats), tags))
        ends_new = []
        if new:
            still_new = []
            for p in new:
                theirs = tags_of[p]
                if len(theirs) < n_new:
                    still_new.append(p)
                else:  # the match of their n_new-th game is in this chunk
                    ends_new.append((bisect_left(tags0, theirs[n_new - 1] & ~255), p))
            new = still_new
            ends_new.sort()
        ends_new.append((n - 1, -1))
        start = 0
        for last, player in ends_new:
            stop = last + 1
            for i, j, score0 in zip(
                seat0[start:stop], seat1[start:stop], scores[start:stop], strict=True
            ):
                ra = rating[i]
                rb = rating[j]
                d = ra - rb
                if d > cap:
                    d = cap
                elif d < ncap:
                    d = ncap
                x = d / 400.0  # -x is exactly -d / 400.0
                rating[i] = na = ra + k_of[i] * (score0 - 1.0 / (1.0 + 10.0 ** -x))
                rating[j] = nb = rb + k_of[j] * ((1.0 - score0) - 1.0 / (1.0 + 10.0 ** x))
                append[i](na)
                append[j](nb)
                if na >= master and not is_master[i]:
                    is_master[i] = True  # rare: first at or above the master rating
                    if len(afters[i]) >= n_new:
                        k_of[i] = k_master
                if nb >= master and not is_master[j]:
                    is_master[j] = True
                    if len(afters[j]) >= n_new:
                        k_of[j] = k_master
            if player >= 0:  # that player's new_player_games-th game is rated
                k_of[player] = k_master if is_master[player] else k_est
            start = max(start, stop)
    return Fold(rating, afters, tags_of)


def folded_table(fold: Fold, settings: EloSettings) -> Iterator[tuple[int, list[Any]]]:
    """Each rated player's index and ``[rating, games, wins, draws, losses, peak,
    reached_master]``, as ``elo.Ladder`` keeps them."""
    initial, master = settings.initial, settings.master_rating
    for p, (theirs, tags) in enumerate(zip(fold.afters, fold.tags, strict=True)):
        if theirs:
            codes = _little_endian(tags)[0::8]
            peak = max(initial, max(theirs))
            yield p, [fold.rating[p], len(theirs), codes.count(2), codes.count(1),
                      codes.count(0), peak, peak >= master]


def rate_results(
    results: Iterable[tuple[str, int, str, str, float]], settings: EloSettings
) -> tuple[dict[str, list[Any]], dict[str, list[tuple[int, float, float, float]]]]:
    """``rate_chunks`` over ``(match_id, position, player0, player1, score0)`` in
    memory (what ``elo.recompute`` takes): per player id their ``folded_table``
    row and their history ``(position, before, after, score)``. For tests."""
    roster = Roster()
    seat0, seat1, scores, tags0, tags1 = [], [], [], [], []
    code = {1.0: 2, 0.5: 1, 0.0: 0}
    for _match, position, p0, p1, score0 in results:
        seat0.append(roster[p0])
        seat1.append(roster[p1])
        scores.append(score0)
        tags0.append(position * 256 + code[score0])
        tags1.append(position * 256 + 2 - code[score0])
    fold = rate_chunks([(seat0, seat1, scores, tags0, tags1)], len(roster), settings)
    ids = list(roster)
    table = {ids[p]: row for p, row in folded_table(fold, settings)}
    history = {}
    for p, player_id in enumerate(ids):
        theirs = fold.afters[p].tolist()
        befores = [settings.initial, *theirs][:-1]
        history[player_id] = [
            (tag >> 8, before, after, (tag & 255) / 2)
            for tag, before, after in zip(fold.tags[p], befores, theirs, strict=True)
        ]
    return table, history


# -- writing ----------------------------------------------------------------------------

_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_BINARY_TRAILER = struct.pack(">h", -1)
_INT8_OID = 20
_FLOAT8_OID = 701
_LITTLE_ENDIAN = sys.byteorder == "little"
_ARRAY_HEADER = struct.Struct(">iiIii").pack  # ndim 1, no nulls, element type, length, 1
_FIELD = struct.Struct(">i").pack
_ROW = struct.pack(">h", 6)  # the fields of a rating_histories row
# A score's big-endian float8 from its code (2 win, 1 draw, 0 loss): only the
# first two bytes differ (1.0 = 3ff0 0000 0000 0000, 0.5 = 3fe0 ..., 0.0 = 0).
_SCORE_BYTE0 = bytes([0x00, 0x3F, 0x3F] + [0] * 253)
_SCORE_BYTE1 = bytes([0x00, 0xE0, 0xF0] + [0] * 253)
assert [struct.pack(">d", v)[:2] for v in (0.0, 0.5, 1.0)] == [
    bytes([_SCORE_BYTE0[c], _SCORE_BYTE1[c]]) for c in (0, 1, 2)
]


def _little_endian(values: array[Any]) -> bytes:
    if _LITTLE_ENDIAN:
        return values.tobytes()
    swapped = array(values.typecode, values)
    swapped.byteswap()
    return swapped.tobytes()


def _cells(columns: Sequence[bytes | None], n: int) -> bytearray:
    """``n`` array elements in COPY's binary format, each its length (8) and 8
    bytes; byte ``k`` of element ``e`` is ``columns[k][e]`` (None: all zero).
    Laid out with strided slice assignments: no Python step per element."""
    cells = bytearray(12 * n)
    cells[3::12] = b"\x08" * n
    for k, column in enumerate(columns):
        if column is not None:
            cells[4 + k :: 12] = column
    return cells


WRITE_BLOCK = 500
"""Players per block of the history COPY: PostgreSQL stores a block while Python
lays out the next."""


def _write(
    cur: psycopg.Cursor[Any],
    ladder_id: str,
    player_ids: list[Any],
    fold: Fold,
    settings: EloSettings,
) -> None:
    """COPY the folded ladder into ``rating_histories`` and ``ratings`` (binary).

    The history goes in blocks of ``WRITE_BLOCK`` players, handed to a thread
    that writes them to the connection (psycopg's ``QueuedLibpqWriter``) while
    the next block is laid out.
    """
    rated = [p for p, theirs in enumerate(fold.afters) if theirs]
    initial_cell = b"\x00\x00\x00\x08" + struct.pack(">d", settings.initial)
    ladder_field = _FIELD(len(ladder_id.encode())) + ladder_id.encode()
    with cur.copy(
        "COPY rating_histories (ladder_id, player_id, positions, before, after, scores)"
        " FROM STDIN (FORMAT BINARY)",
        writer=QueuedLibpqWriter(cur),
    ) as copy:
        copy.write(_BINARY_HEADER)
        for start in range(0, len(rated), WRITE_BLOCK):
            players = rated[start : start + WRITE_BLOCK]
            copy.write(_history_rows(ladder_field, player_ids, players, fold, initial_cell))
        copy.write(_BINARY_TRAILER)
    provisional_games = settings.provisional_games
    with cur.copy(
        "COPY ratings (ladder_id, player_id, rating, games, wins, draws, losses, peak,"
        " reached_master, provisional) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["text", "text", "float8", "int4", "int4", "int4", "int4", "float8",
                        "bool", "bool"])
        for p, row in folded_table(fold, settings):
            copy.write_row((ladder_id, player_ids[p], *row, row[1] < provisional_games))


def _history_rows(
    ladder_field: bytes, player_ids: list[Any], players: list[int], fold: Fold,
    initial_cell: bytes,
) -> bytes:
    """The ``rating_histories`` rows of ``players`` in COPY's binary format.

    Their entries are laid out one after the other, each column at once:
    ``after`` from the ratings (big-endian doubles), ``positions`` and
    ``scores`` from the tags (a tag's little-endian bytes are the code, then
    the position's bytes), ``before`` as each player's initial rating and
    their ``after`` but the last. A player's arrays are then a header and a
    slice.
    """
    after = array("d")
    tags = array("q")
    for p in players:
        after += fold.afters[p]
        tags += fold.tags[p]
    n = len(after)
    if _LITTLE_ENDIAN:
        after.byteswap()
    raw = after.tobytes()
    after_cells = memoryview(_cells([raw[k::8] for k in range(8)], n))
    raw = _little_endian(tags)
    codes = raw[0::8]
    # the position is the tag's bytes 1 to 7 (the highest is 0): big-endian, 0 then bytes 7 .. 1
    position_cells = memoryview(_cells([None, *(raw[k::8] for k in range(7, 0, -1))], n))
    score_cells = memoryview(
        _cells([codes.translate(_SCORE_BYTE0), codes.translate(_SCORE_BYTE1)], n)
    )
    block: list[Any] = []
    first = 0
    for p in players:
        g = len(fold.afters[p])
        lo, hi = 12 * first, 12 * (first + g)
        player = str(player_ids[p]).encode()
        int8s = _ARRAY_HEADER(1, 0, _INT8_OID, g, 1)
        float8s = _ARRAY_HEADER(1, 0, _FLOAT8_OID, g, 1)
        size = _FIELD(20 + 12 * g)
        block += (
            _ROW, ladder_field, _FIELD(len(player)), player,
            size, int8s, position_cells[lo:hi],
            size, float8s, initial_cell, after_cells[lo : hi - 12],
            size, float8s, after_cells[lo:hi],
            size, float8s, score_cells[lo:hi],
        )
        first += g
    return b"".join(block)


# -- reading ----------------------------------------------------------------------------


def _read(
    cur: psycopg.Cursor[Any],
    query: str,
    params: dict[str, Any],
    *,
    once: bool = False,
    ahead: int = 2,
    parse: Callable[..., Any] | None = None,
) -> Generator[Any, None, None]:
    """The chunks of a read (``_CREATED_CHUNK``, ``_ENDED_CHUNK``), each its row
    but the first column, or what ``parse`` makes of those columns.

    ``query`` returns the last position it read, then the chunk (NULL: no more
    rows); keyset paging on that position reads the next (``once``: a single
    read). The read starts at once; closing the generator stops it. ``parse``
    runs in the reading thread: it fills the time the caller spends waiting.
    """

    def read(after: int) -> tuple[Any, int | None]:
        row = cur.execute(query, {**params, "after": after}).fetchone()
        if row is None or row[1] is None:
            return None, None
        return (row[1:] if parse is None else parse(*row[1:])), row[0]

    return _read_ahead(read, once=once, ahead=ahead)


def _in_order(ids: str, tags: bytes | None) -> tuple[list[str], list[int], bytes]:
    """A chunk of results (``_ENDED_CHUNK``): the match ids, seat 0's tags, and
    seat 0's codes, in position order."""
    match_ids = ids.split("\t")
    tags = tags or b""  # NULL: no valid winner at all
    values = array("q")
    values.frombytes(tags)
    if _LITTLE_ENDIAN:
        values.byteswap()
    tags0 = values.tolist()
    codes = tags[7::8]  # the tag's lowest byte
    if len(tags0) != len(match_ids):
        raise ValueError("a match_ended event whose winner is neither 0, 1 nor null")
    if not all(map(lt, tags0, islice(tags0, 1, None))):
        # PostgreSQL aggregates in the order of the subquery; were it ever not so
        order = sorted(range(len(tags0)), key=tags0.__getitem__)
        match_ids = list(map(match_ids.__getitem__, order))
        tags0 = list(map(tags0.__getitem__, order))
        codes = bytes(map(codes.__getitem__, order))
    return match_ids, tags0, codes


def _read_ahead(
    read: Callable[[int], tuple[Any, int | None]], *, once: bool = False, ahead: int = 2
) -> Generator[Any, None, None]:
    """The chunks ``read(after)`` returns, keyset-paged on the last position.

    A thread fetches chunk n+1 while the caller works on chunk n, so PostgreSQL
    and Python work side by side (psycopg releases the GIL while it waits).
    Errors are handed to the caller; a caller that drops the iterator stops
    the thread. The thread starts at once; ``ahead`` chunks may wait (0: any).
    """
    chunks: queue.Queue[Any] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                chunks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def fetch() -> None:
        after = 0
        try:
            while True:
                text, last = read(after)
                if text is None:
                    break
                if not put(text):
                    return
                if once or last is None:
                    break
                after = last
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)
            return
        put(None)

    fetcher = threading.Thread(target=fetch, name="ratings-read", daemon=True)
    fetcher.start()

    def consume() -> Generator[Any, None, None]:
        try:
            while (item := chunks.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            fetcher.join()

    return consume()
