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
from collections.abc import Callable, Iterable
from typing import Any

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

# The full recompute's reads. Big ones come in chunks that PostgreSQL joins
# into one string each (Python splits it in C: far cheaper than a message per
# row), in COPY's text layout: tab-separated, NULL as \N.
_CREATED_CHUNK = """
SELECT string_agg(match_id || E'\\t' || p0 || E'\\t' || p1, E'\\n' ORDER BY position),
       max(position)
FROM (SELECT position, match_id, data -> 'players' ->> 0 AS p0, data -> 'players' ->> 1 AS p1
      FROM events
      WHERE type = 'match_created' AND data ->> 'ladder_id' = %s
        AND position > %s AND position <= %s
      ORDER BY data ->> 'ladder_id', position
      LIMIT %s) AS chunk
"""
_COPY_ANNULLED = """
COPY (SELECT match_id FROM events WHERE type = 'match_annulled' AND position <= {high}) TO STDOUT
"""
_COPY_ENDED_OF = """
COPY (SELECT position, match_id, data ->> 'winner'
      FROM events WHERE match_id = ANY({matches}) AND type = 'match_ended' AND position <= {high}
      ORDER BY position)
TO STDOUT
"""

_ENDED_CHUNK = """
SELECT string_agg(position || E'\\t' || match_id || E'\\t' || coalesce(winner, E'\\\\N'),
                  E'\\n' ORDER BY position),
       max(position)
FROM (SELECT position, match_id, data ->> 'winner' AS winner
      FROM events
      WHERE type = 'match_ended' AND position > %s AND position <= %s
      ORDER BY position
      LIMIT %s) AS chunk
"""
ENDED_CHUNK_ROWS = 50_000
"""Rows per read of a big recompute."""

SMALL_LADDER = 20_000
"""Up to this many matches, a recompute looks the ladder's match_ended events up
by match (the (match_id, version) index) instead of scanning every ladder's."""

_SCORE = {b"0": 1.0, b"1": 0.0, b"\\N": 0.5}
"""Seat 0's score from the text of MatchEnded.winner (NULL: a draw)."""

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


def _literal(conn: psycopg.Connection, value: str | int | list[str]) -> str:
    """A SQL literal (COPY (query) takes no parameters)."""
    from psycopg import sql

    return sql.Literal(value).as_string(conn)


def _recompute(
    conn: psycopg.Connection,
    reader: psycopg.Connection,
    ladder_id: str,
    settings: Any,
    high: int,
    report: Progress,
) -> int:
    rcur = reader.cursor()

    # 1. The ladder's matches: match id -> (player0, player1). Ids stay bytes
    #    from read to write: decoding a million ids would cost more than the
    #    Elo. (Ids are generated UUIDs: no tab, newline or backslash to escape.)
    seats: dict[bytes, tuple[bytes, bytes]] = {}
    for line in _chunks(rcur, _CREATED_CHUNK, (ladder_id,), high):
        match_id, p0, p1 = line.split(b"\t")
        seats[match_id] = (p0, p1)
    with rcur.copy(_COPY_ANNULLED.format(high=high)) as copy:
        for line in _lines(copy):
            seats.pop(line, None)
    total = len(seats)
    report("rating", 0, total)

    wcur = conn.cursor()
    wcur.execute("DELETE FROM rating_histories WHERE ladder_id = %s", (ladder_id,))
    wcur.execute("DELETE FROM ratings WHERE ladder_id = %s", (ladder_id,))

    # 2. Every result in committed order: the hot loop, streaming history rows
    #    out as it goes. State per player is a list [rating, games, wins,
    #    draws, losses, peak, reached_master], exactly as in elo.Ladder.rate.
    if total <= SMALL_LADDER:
        ids = _literal(conn, [m.decode() for m in seats])
        with rcur.copy(_COPY_ENDED_OF.format(matches=ids, high=high)) as source:
            players, done = rate_stream(_lines(source), seats, settings, total, report)
    else:
        players, done = rate_stream(
            _chunks(rcur, _ENDED_CHUNK, (), high), seats, settings, total, report
        )

    # 3. Write: one row per player, the history as arrays in COPY's binary
    #    format, built with C-level slicing (the floats go over as their 8
    #    bytes, never formatted as text, never one Python call per element).
    report("writing", done, total)
    ladder_bytes = ladder_id.encode()
    with wcur.copy(
        "COPY rating_histories (ladder_id, player_id, positions, before, after, scores)"
        " FROM STDIN (FORMAT BINARY)"
    ) as copy:
        block = [_BINARY_HEADER]
        for st in players.values():
            flat = st[7]
            block.append(_binary_row((
                ladder_bytes,
                st[8],
                _binary_array(flat[0::4], "q", _INT8_OID),
                _binary_array(flat[1::4], "d", _FLOAT8_OID),
                _binary_array(flat[2::4], "d", _FLOAT8_OID),
                _binary_array(flat[3::4], "d", _FLOAT8_OID),
            )))
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
        for st in players.values():
            copy.write_row((ladder_id, st[8].decode(), st[0], st[1], st[2], st[3], st[4], st[5],
                            bool(st[6]), st[1] < provisional_games))
    return done


def rate_stream(
    lines: Iterable[bytes],
    seats: dict[bytes, tuple[bytes, bytes]],
    settings: EloSettings,
    total: int = 0,
    report: Progress | None = None,
) -> tuple[dict[bytes, list[Any]], int]:
    """Rate ``position\\tmatch_id\\twinner`` lines (COPY text) of the matches in ``seats``.

    The hot loop of a recompute. State per player is a list ``[rating, games,
    wins, draws, losses, peak, reached_master, history, id]``, updated exactly
    as ``elo.Ladder.rate`` does (same operations, same order: same bits).
    """
    report = report or (lambda phase, done, total: None)
    s = settings
    initial, cap, n_new = s.initial, s.max_difference, s.new_player_games
    k_new, k_est, k_master, master = s.k_new, s.k, s.k_master, s.master_rating
    start_master = initial >= master
    players: dict[bytes, list[Any]] = {}
    get_seats = seats.get
    get_player = players.get
    score_of = _SCORE
    done = 0
    for line in lines:
        position, match_id, winner = line.split(b"\t")
        pair = get_seats(match_id)
        if pair is None:
            continue  # another ladder's match, or annulled
        p0, p1 = pair
        a = get_player(p0)
        if a is None:
            a = players[p0] = [initial, 0, 0, 0, 0, initial, start_master, [], p0]
        b = get_player(p1)
        if b is None:
            b = players[p1] = [initial, 0, 0, 0, 0, initial, start_master, [], p1]
        score0 = score_of[winner]
        ra = a[0]
        rb = b[0]
        d = ra - rb
        if d > cap:
            d = cap
        elif d < -cap:
            d = -cap
        ea = 1.0 / (1.0 + 10.0 ** (-d / 400.0))
        eb = 1.0 / (1.0 + 10.0 ** (d / 400.0))
        ka = k_new if a[1] < n_new else (k_master if a[6] else k_est)
        kb = k_new if b[1] < n_new else (k_master if b[6] else k_est)
        score1 = 1.0 - score0
        ca = ka * (score0 - ea)
        cb = kb * (score1 - eb)
        na = ra + ca
        nb = rb + cb
        a[0] = na
        b[0] = nb
        a[1] += 1
        b[1] += 1
        if score0 == 1.0:
            a[2] += 1
            b[4] += 1
        elif score0 == 0.0:
            a[4] += 1
            b[2] += 1
        else:
            a[3] += 1
            b[3] += 1
        if na > a[5]:
            a[5] = na
            if na >= master:
                a[6] = True
        if nb > b[5]:
            b[5] = nb
            if nb >= master:
                b[6] = True
        # history, flattened: (position, before, after, score) per match
        pos = int(position)
        a[7] += (pos, ra, na, score0)
        b[7] += (pos, rb, nb, score1)
        done += 1
        if not done % PROGRESS_EVERY:
            report("rating", done, total)
    return players, done


_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_BINARY_TRAILER = struct.pack(">h", -1)
_INT8_OID = 20
_FLOAT8_OID = 701
_LITTLE_ENDIAN = sys.byteorder == "little"


def _binary_array(values: list[Any], typecode: str, oid: int) -> bytes:
    """A one-dimensional array of 8-byte values in PostgreSQL's binary format.

    Header (ndim 1, no nulls, element type, length, lower bound 1), then each
    element as its length (8, big-endian int32) and its 8 big-endian bytes.
    The elements are laid out with eight strided slice assignments rather than
    a Python loop: a recompute writes millions of them.
    """
    n = len(values)
    packed = array(typecode, values)
    if _LITTLE_ENDIAN:
        packed.byteswap()
    raw = packed.tobytes()
    out = bytearray(20 + 12 * n)
    struct.pack_into(">iiIii", out, 0, 1, 0, oid, n, 1)
    out[23::12] = b"\x08" * n
    for j in range(8):
        out[24 + j :: 12] = raw[j::8]
    return bytes(out)


def _binary_row(fields: tuple[bytes, ...]) -> bytes:
    """One tuple of a binary COPY: the field count, then each field's length and bytes."""
    return struct.pack(">h", len(fields)) + b"".join(
        struct.pack(">i", len(f)) + f for f in fields
    )


def _chunks(
    cur: psycopg.Cursor[Any], query: str, params: tuple[Any, ...], high: int
) -> Iterable[bytes]:
    """The lines of a chunked read (``_CREATED_CHUNK``, ``_ENDED_CHUNK``) up to
    position ``high``, in position order: keyset paging on the position.

    A thread fetches the next chunk while the caller works on this one, so
    PostgreSQL builds chunk n+1 while Python rates chunk n (psycopg releases
    the GIL while it waits for the server).
    """
    chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item: bytes | BaseException | None) -> bool:
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
                row = cur.execute(query, (*params, after, high, ENDED_CHUNK_ROWS)).fetchone()
                if row is None or row[0] is None:
                    break
                if not put(row[0].encode()):
                    return
                after = row[1]
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)
            return
        put(None)

    fetcher = threading.Thread(target=fetch, name="ratings-read", daemon=True)
    fetcher.start()
    try:
        while (item := chunks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield from item.split(b"\n")
    finally:
        stop.set()
        fetcher.join()


def _lines(copy: Any) -> Any:
    """The rows of a text-format COPY TO STDOUT, without their newline.

    psycopg hands over one buffer per row; ids here never contain a tab,
    newline or backslash (they are generated), so no unescaping is needed
    beyond what the callers check.
    """
    for data in copy:
        yield bytes(data)[:-1]
