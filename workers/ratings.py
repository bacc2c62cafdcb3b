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

Both paths run the same ``workers.elo.Ladder.rate`` in the same order, so a
recompute from scratch gives bit-for-bit the incremental result (tested).

The full recompute is built for speed (docs/ratings.md, bench/bench_workers.py):
two streamed COPYs (the ladder's match_created rows, then every match_ended row
in position order), a tight loop over plain dicts and floats, and COPY to write.
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
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, compress, count
from operator import itemgetter
from typing import Any, NamedTuple

import msgspec
import psycopg

from workers import db
from workers.elo import EloSettings, Ladder, PlayerRating, settings_from_json

log = logging.getLogger("matcha.workers.ratings")

PROGRESS_EVERY = 50_000
"""Matches between two progress reports in the job's meta (a multiple of CHUNK)."""

CHUNK = 10_000
"""Matches per block of history rows handed to COPY."""

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
# needs and ships a whole chunk as ONE string: every field of every row
# separated by a tab, in position order. Python splits it once, in C, and
# takes the columns with strided slices: no message and no split per row.
# (Ids are generated: no tab in them. A draw's winner is NULL: shipped as 'D'.)
# Big reads come in chunks (keyset paging on the position) that a thread
# fetches while Python works on the previous one.
_CREATED_CHUNK = """
SELECT max(position),
       string_agg(match_id || E'\\t' || p0 || E'\\t' || p1, E'\\t' ORDER BY position)
FROM (SELECT position, match_id, data -> 'players' ->> 0 AS p0, data -> 'players' ->> 1 AS p1
      FROM events
      WHERE type = 'match_created' AND data ->> 'ladder_id' = %(ladder)s
        AND position > %(after)s AND position <= %(high)s
        AND match_id <> ALL(%(annulled)s)
      ORDER BY data ->> 'ladder_id', position
      LIMIT %(rows)s) AS chunk
"""
_ENDED_CHUNK = """
SELECT max(position),
       string_agg(match_id || E'\\t' || coalesce(winner, 'D') || E'\\t' || position, E'\\t'
                  ORDER BY position)
FROM (SELECT position, match_id, data ->> 'winner' AS winner
      FROM events
      WHERE type = 'match_ended' AND position > %(after)s AND position <= %(high)s
      ORDER BY position
      LIMIT %(rows)s) AS chunk
"""
_ENDED_OF = """
SELECT NULL,
       string_agg(match_id || E'\\t' || coalesce(data ->> 'winner', 'D') || E'\\t' || position,
                  E'\\t' ORDER BY position)
FROM events
WHERE match_id = ANY(%(matches)s) AND type = 'match_ended' AND position <= %(high)s
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

_SCORE = {"0": 1.0, "1": 0.0, "D": 0.5}
"""Seat 0's score from the winner field of a result chunk ('D': a draw)."""
_FLIP = {1.0: 0.0, 0.0: 1.0, 0.5: 0.5}
"""Seat 1's score from seat 0's (``1.0 - score0``, exact for these three)."""
_SCORE_BYTES = {b"0": 1.0, b"1": 0.0, b"\\N": 0.5}
"""The same from COPY text (NULL: a draw), for ``rate_stream``."""

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

Chunk = tuple[list[int], list[int], list[float], list[int]]
"""One block of results in order: seat 0's player index, seat 1's, seat 0's score, position."""


class Roster(dict[Any, int]):
    """Player id -> a small integer index, numbering new players as they come.

    The hot loop then keeps each player's state in flat lists indexed by that
    integer (a list subscript is far cheaper than hashing an id), and the ids
    are mapped in C with ``map(roster.__getitem__, ids)`` once per chunk.
    """

    def __missing__(self, player_id: Any) -> int:
        index = self[player_id] = len(self)
        return index


class Rated(msgspec.Struct, frozen=True):
    """One player after a recompute: the ratings row, and where their history is."""

    player_id: Any
    rating: float
    games: int
    wins: int
    draws: int
    losses: int
    peak: float
    reached_master: bool
    first: int
    """Their history is entries ``first`` to ``first + games`` of the ``Histories``."""


class Histories(NamedTuple):
    """Every player's history entries, player after player, each in match order."""

    positions: tuple[int, ...]
    before: list[float]
    after: tuple[float, ...]
    scores: tuple[float, ...]


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
    # A big ladder scans every match_ended row: that read starts now, on the
    # job's own connection (idle until the write), side by side with the
    # match_created read on the reader, so two PostgreSQL backends work at
    # once. Its chunks wait in memory until the seats are known.
    ended = None
    if reader is not conn:
        probe = {**params, "limit": SMALL_LADDER + 1}
        if rcur.execute(_LADDER_SIZE_UP_TO, probe).fetchone()[0] > SMALL_LADDER:  # type: ignore[index]
            ended = _fields(conn.cursor(), _ENDED_CHUNK, params, ahead=0)

    # 1. The ladder's matches, annulled ones left out: match id -> the seats'
    #    player indexes (two dicts, so a chunk of results maps in C).
    roster = Roster()
    index = roster.__getitem__
    number_of: dict[str, int] = {}  # match id -> its number in these lists
    seat0_of: list[int] = []
    seat1_of: list[int] = []
    for fields in _fields(rcur, _CREATED_CHUNK, params):
        match_ids = fields[0::3]
        number_of.update(zip(match_ids, count(len(seat0_of))))
        seat0_of += map(index, fields[1::3])
        seat1_of += map(index, fields[2::3])
    total = len(number_of)
    report("rating", 0, total)

    # 2. Every result in committed order. A small ladder's are looked up by
    #    match; a big one's come from scanning every match_ended event, and
    #    other ladders' matches (not in the seats) are dropped here.
    if ended is not None:
        results = ended
    elif total <= SMALL_LADDER:
        results = _fields(rcur, _ENDED_OF, {**params, "matches": list(number_of)}, once=True)
    else:
        results = _fields(rcur, _ENDED_CHUNK, params)
    score = _SCORE.__getitem__
    rated_so_far = [0]

    def chunks() -> Iterable[Chunk]:
        for fields in results:
            numbers = list(map(number_of.get, fields[0::3]))
            winners = fields[1::3]
            positions = fields[2::3]
            if None in numbers:  # another ladder's matches, or annulled ones
                mine = [k is not None for k in numbers]
                numbers = list(compress(numbers, mine))
                winners = list(compress(winners, mine))
                positions = list(compress(positions, mine))
            yield (list(map(seat0_of.__getitem__, numbers)),  # type: ignore[arg-type]
                   list(map(seat1_of.__getitem__, numbers)),  # type: ignore[arg-type]
                   list(map(score, winners)), list(map(int, positions)))
            seat0 = numbers
            before = rated_so_far[0]
            rated_so_far[0] += len(seat0)
            if rated_so_far[0] // PROGRESS_EVERY != before // PROGRESS_EVERY:
                report("rating", rated_so_far[0], total)

    rated, history = rate_chunks(chunks(), roster, settings)
    done = sum(p.games for p in rated) // 2
    wcur = conn.cursor()
    wcur.execute("DELETE FROM rating_histories WHERE ladder_id = %s", (ladder_id,))
    wcur.execute("DELETE FROM ratings WHERE ladder_id = %s", (ladder_id,))

    # 3. Write: one row per player, the history as arrays in COPY's binary
    #    format, built with C-level slicing (the floats go over as their 8
    #    bytes, never formatted as text, never one Python call per element).
    report("writing", done, done)
    ladder_bytes = ladder_id.encode()
    with wcur.copy(
        "COPY rating_histories (ladder_id, player_id, positions, before, after, scores)"
        " FROM STDIN (FORMAT BINARY)"
    ) as copy:
        block = [_BINARY_HEADER]
        columns = zip(
            _binary_arrays(history.positions, "q", _INT8_OID, rated),
            _binary_arrays(history.before, "d", _FLOAT8_OID, rated),
            _binary_arrays(history.after, "d", _FLOAT8_OID, rated),
            _binary_arrays(history.scores, "d", _FLOAT8_OID, rated),
            strict=True,
        )
        for p, arrays in zip(rated, columns, strict=True):
            block.append(_binary_row((ladder_bytes, p.player_id.encode(), *arrays)))
            if len(block) >= 500:
                copy.write(b"".join(block))
                block.clear()
        block.append(_BINARY_TRAILER)
        copy.write(b"".join(block))
    provisional_games = settings.provisional_games
    with wcur.copy(
        "COPY ratings (ladder_id, player_id, rating, games, wins, draws, losses, peak,"
        " reached_master, provisional) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["text", "text", "float8", "int4", "int4", "int4", "int4", "float8",
                        "bool", "bool"])
        for p in rated:
            copy.write_row((ladder_id, p.player_id, p.rating, p.games, p.wins, p.draws,
                            p.losses, p.peak, p.reached_master, p.games < provisional_games))
    return done


def rate_chunks(
    chunks: Iterable[Chunk], roster: Roster, settings: EloSettings
) -> tuple[list[Rated], Histories]:
    """Rate blocks of results in order: the hot loop of a recompute.

    Does exactly the arithmetic of ``elo.Ladder.rate`` (same operations, same
    order: same bits) but keeps in the loop only what the Elo needs, in flat
    lists indexed by the roster's integers: ratings, K, the master mark. The
    rest needs no Python step per match:

    * which player plays which history entry (entry 2m is seat 0 of match m,
      2m + 1 seat 1) does not depend on ratings: appended per chunk with
      ``map`` (C), and from it the match after which a player stops being new
      (their ``new_player_games``-th). The loop runs in segments between
      those matches and changes that player's K in between, so it never
      counts games;
    * after the loop, a player's history is gathered with ``itemgetter`` (C):
      ``before`` is ``initial`` then their previous ``after`` (a rating moves
      only through matches), wins/draws/losses count the scores, the peak is
      the largest rating, and "reached master" is the peak reaching it.
    """
    s = settings
    initial, cap, n_new = s.initial, s.max_difference, s.new_player_games
    k_new, k_est, k_master, master = s.k_new, s.k, s.k_master, s.master_rating
    start_master = initial >= master
    k_start = k_new if n_new > 0 else (k_master if start_master else k_est)
    rating: list[float] = []
    k_of: list[float] = []
    is_master: list[bool] = []
    entries: list[list[int]] = []  # per player: their history entries, in order
    after: list[float] = []  # per entry: the rating after it
    score0s: list[float] = []
    positions: list[int] = []
    consume = deque[None](maxlen=0).extend

    def reach_master(player: int, entry: int) -> None:
        # rare: a player's first rating at or above the master rating
        is_master[player] = True
        if bisect_right(entries[player], entry) >= n_new:
            k_of[player] = k_master

    for seat0, seat1, scores, chunk_positions in chunks:
        grow = len(roster) - len(rating)
        if grow:
            rating += [initial] * grow
            k_of += [k_start] * grow
            is_master += [start_master] * grow
            entries += [[] for _ in range(grow)]
        base = 2 * len(score0s)
        n = len(scores)
        seats = [0] * (2 * n)
        seats[0::2] = seat0
        seats[1::2] = seat1
        played_before = list(map(len, entries))
        consume(map(list.append, map(entries.__getitem__, seats), count(base)))
        ends_new = sorted(
            (entries[p][n_new - 1], p)
            for p, played in enumerate(played_before)
            if played < n_new <= len(entries[p])
        )
        ends_new.append((base + 2 * n - 1, -1))
        after += [0.0] * (2 * n)
        start = 0
        for last_entry, player in ends_new:
            stop = (last_entry - base) // 2 + 1
            for entry, i, j, score0 in zip(
                count(base + 2 * start, 2), seat0[start:stop], seat1[start:stop],
                scores[start:stop],
            ):
                ra = rating[i]
                rb = rating[j]
                d = ra - rb
                if d > cap:
                    d = cap
                elif d < -cap:
                    d = -cap
                na = ra + k_of[i] * (score0 - 1.0 / (1.0 + 10.0 ** (-d / 400.0)))
                nb = rb + k_of[j] * ((1.0 - score0) - 1.0 / (1.0 + 10.0 ** (d / 400.0)))
                rating[i] = na
                rating[j] = nb
                after[entry] = na
                after[entry + 1] = nb
                if na >= master and not is_master[i]:
                    reach_master(i, entry)
                if nb >= master and not is_master[j]:
                    reach_master(j, entry + 1)
            if player >= 0:  # that player's new_player_games-th game is rated
                k_of[player] = k_master if is_master[player] else k_est
            start = max(start, stop)
        score0s += scores
        positions += chunk_positions

    n = len(score0s)
    score = [0.0] * (2 * n)
    score[0::2] = score0s
    score[1::2] = map(_FLIP.__getitem__, score0s)  # 1.0 - score0, as Ladder.rate
    position = [0] * (2 * n)
    position[0::2] = positions
    position[1::2] = positions
    # Every player's entries one after the other, each column gathered in
    # that order in one C call (a call per player would cost more).
    order = list(chain.from_iterable(entries))
    if not order:
        return [], Histories((), [], (), ())
    gather = itemgetter(*order)  # two entries at least: a tuple back
    history = Histories(gather(position), [initial, *gather(after)[:-1]], gather(after),
                        gather(score))
    rated = []
    first = 0
    for player_id, index in roster.items():
        games = len(entries[index])
        if not games:
            continue
        last = first + games
        history.before[first] = initial  # a player's first game starts from the initial rating
        theirs = history.after[first:last]
        scores = history.scores[first:last]
        peak = max(initial, max(theirs))
        rated.append(Rated(player_id, theirs[-1], games, scores.count(1.0), scores.count(0.5),
                           scores.count(0.0), peak, peak >= master, first))
        first = last
    return rated, history


def rate_stream(
    lines: Iterable[bytes],
    seats: dict[bytes, tuple[bytes, bytes]],
    settings: EloSettings,
) -> tuple[dict[bytes, list[Any]], int]:
    """Rate ``position\\tmatch_id\\twinner`` lines (COPY text) of the matches in ``seats``.

    ``rate_chunks`` for callers holding COPY lines: lines of other matches are
    skipped. Returns per player ``[rating, games, wins, draws, losses, peak,
    reached_master, history, id]``, the history flattened as (position,
    before, after, score) per match.
    """
    roster = Roster()
    seat0: list[int] = []
    seat1: list[int] = []
    scores: list[float] = []
    positions: list[int] = []
    for line in lines:
        position, match_id, winner = line.split(b"\t")
        pair = seats.get(match_id)
        if pair is None:
            continue
        seat0.append(roster[pair[0]])
        seat1.append(roster[pair[1]])
        scores.append(_SCORE_BYTES[winner])
        positions.append(int(position))
    players: dict[bytes, list[Any]] = {}
    rated, history = rate_chunks([(seat0, seat1, scores, positions)], roster, settings)
    for p in rated:
        flat: list[Any] = [None] * (4 * p.games)
        mine = slice(p.first, p.first + p.games)
        flat[0::4] = history.positions[mine]
        flat[1::4] = history.before[mine]
        flat[2::4] = history.after[mine]
        flat[3::4] = history.scores[mine]
        players[p.player_id] = [p.rating, p.games, p.wins, p.draws, p.losses, p.peak,
                                p.reached_master, flat, p.player_id]
    return players, len(scores)


_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_BINARY_TRAILER = struct.pack(">h", -1)
_INT8_OID = 20
_FLOAT8_OID = 701
_LITTLE_ENDIAN = sys.byteorder == "little"


def _binary_arrays(
    values: Sequence[Any], typecode: str, oid: int, rated: list[Rated]
) -> list[bytes]:
    """Each player's slice of ``values`` as a one-dimensional array of 8-byte
    values in PostgreSQL's binary format.

    Header (ndim 1, no nulls, element type, length, lower bound 1), then each
    element as its length (8, big-endian int32) and its 8 big-endian bytes.
    All the elements are laid out at once with eight strided slice
    assignments (a recompute writes millions of them); a player's array is
    then a header and a slice.
    """
    n = len(values)
    packed = array(typecode, values)
    if _LITTLE_ENDIAN:
        packed.byteswap()
    raw = packed.tobytes()
    cells = bytearray(12 * n)
    cells[3::12] = b"\x08" * n
    for j in range(8):
        cells[4 + j :: 12] = raw[j::8]
    header = struct.Struct(">iiIii").pack
    return [
        header(1, 0, oid, p.games, 1) + cells[12 * p.first : 12 * (p.first + p.games)]
        for p in rated
    ]


def _binary_row(fields: tuple[bytes, ...]) -> bytes:
    """One tuple of a binary COPY: the field count, then each field's length and bytes."""
    return struct.pack(">h", len(fields)) + b"".join(
        struct.pack(">i", len(f)) + f for f in fields
    )


def _fields(
    cur: psycopg.Cursor[Any],
    query: str,
    params: dict[str, Any],
    *,
    once: bool = False,
    ahead: int = 2,
) -> Iterator[list[str]]:
    """The fields of each chunk of a read (``_CREATED_CHUNK``, ``_ENDED_CHUNK``).

    ``query`` returns the last position it read and the chunk's string; keyset
    paging on that position reads the next (``once``: a single read).
    """

    def read(after: int) -> tuple[str | None, int | None]:
        row = cur.execute(query, {**params, "after": after}).fetchone()
        return (None, None) if row is None else (row[1], row[0])

    return (item.split("\t") for item in _read_ahead(read, once=once, ahead=ahead))


def _chunks(
    cur: psycopg.Cursor[Any], query: str, params: tuple[Any, ...], high: int
) -> Iterable[bytes]:
    """The lines of a chunked read up to position ``high`` whose ``query`` takes
    ``(*params, after, high, rows)`` and returns the chunk's newline-separated
    lines and its last position (the layout of COPY-style callers)."""

    def read(after: int) -> tuple[str | None, int | None]:
        row = cur.execute(query, (*params, after, high, ENDED_CHUNK_ROWS)).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    for item in _read_ahead(read):
        yield from item.encode().split(b"\n")


def _read_ahead(
    read: Callable[[int], tuple[str | None, int | None]], *, once: bool = False, ahead: int = 2
) -> Iterator[str]:
    """The chunks ``read(after)`` returns, keyset-paged on the last position.

    A thread fetches chunk n+1 while the caller works on chunk n, so PostgreSQL
    and Python work side by side (psycopg releases the GIL while it waits).
    Errors are handed to the caller; a caller that drops the iterator stops
    the thread. The thread starts at once; ``ahead`` chunks may wait (0: any).
    """
    chunks: queue.Queue[str | BaseException | None] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def put(item: str | BaseException | None) -> bool:
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

    def consume() -> Iterator[str]:
        try:
            while (item := chunks.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            fetcher.join()

    return consume()
