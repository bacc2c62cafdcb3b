"""Reading a ladder's log for the ratings: the SQL and the chunked readers.

The full recompute's reads ship a whole chunk of rows in one row (docs/ratings.md):
text fields joined by tabs in one string, numbers as one ``bytea`` of 8-byte
big-endian integers; a thread fetches chunk n+1 while Python works on chunk n.
Both rating systems read the same way; Glicko-2 also reads each result's
rating period (``period_us``: the period's length in microseconds).
"""

from __future__ import annotations

import queue
import sys
import threading
from array import array
from collections.abc import Callable, Generator
from itertools import islice
from operator import lt
from typing import Any

import psycopg

_LITTLE_ENDIAN = sys.byteorder == "little"

# The full recompute's reads. PostgreSQL extracts only the fields the Elo
# needs and ships a whole chunk in one row: text fields joined by tabs in ONE
# string (Python splits it once, in C, and takes the columns with strided
# slices: no message and no split per row; ids are generated, no tab in them),
# numbers as one bytea of 8-byte big-endian integers (an array('q') at once).
# Big reads come in chunks (keyset paging on the position) that a thread
# fetches while Python works on the previous one. The ladder's matches may come
# in any order within a chunk (they are only numbered): no sort for them.
CREATED_CHUNK = """
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
# win, 1 draw, 0 loss, plus 4 when the match ended on time; 3: aborted, not
# rated; see codes.py). A winner that is none of 0, 1 or null gives no tag
# (string_agg skips NULL): the chunk's counts differ and Python refuses it.
# (A position of 2 ** 55 or more overflows the bigint: an error, never a wrong
# tag.) The aggregates take the rows in the subquery's order, the position's;
# Python checks that (``in_order``) rather than paying for a sort.
_TAG = """position * 256 + CASE data ->> 'reason' WHEN 'aborted' THEN 3 ELSE
    CASE coalesce(data ->> 'winner', 'D') WHEN '0' THEN 2 WHEN 'D' THEN 1 WHEN '1' THEN 0 END
    + CASE data ->> 'reason' WHEN 'timeout' THEN 4 ELSE 0 END END"""
PERIOD = "(date_part('epoch', recorded_at) * 1000000)::bigint / %(period_us)s"
"""A result's rating period by the clock: its match_ended event's ``recorded_at``
in whole microseconds since 1970-01-01 UTC, divided by the period's length
(docs/ratings.md, "Rating periods"). The same expression for every read."""
# The bounds are row comparisons on (type, position), which say exactly "type
# match_ended, position in (after, high]" and which only events_type_position_idx
# can serve: when results are a large share of the events, the planner would
# otherwise walk the primary key and filter on the type, and a chunk after a
# long stretch of other events would read them all first.


def _ended_columns(periods: bool) -> tuple[str, str]:
    if periods:
        return (
            f"position, match_id, {_TAG} AS tag, {PERIOD} AS period",
            "string_agg(int8send(tag), ''), string_agg(int8send(period), '')",
        )
    return f"position, match_id, {_TAG} AS tag", "string_agg(int8send(tag), '')"


def ended_chunk(periods: bool) -> str:
    """Every match_ended row in position order, a chunk at a time; with ``periods``
    a third column: each row's rating period (``PERIOD``) as 8-byte integers."""
    inner, outer = _ended_columns(periods)
    return f"""
SELECT max(position), string_agg(match_id, E'\\t'), {outer}
FROM (SELECT {inner}
      FROM events
      WHERE (type, position) > ('match_ended', %(after)s)
        AND (type, position) <= ('match_ended', %(high)s)
      ORDER BY type, position
      LIMIT %(rows)s) AS chunk
"""


def ended_of(periods: bool) -> str:
    """The match_ended rows of the given matches (a small ladder), in position order."""
    inner, outer = _ended_columns(periods)
    return f"""
SELECT NULL, string_agg(match_id, E'\\t'), {outer}
FROM (SELECT {inner}
      FROM events
      WHERE match_id = ANY(%(matches)s) AND type = 'match_ended' AND position <= %(high)s
      ORDER BY position) AS ended
"""


LADDER_SIZE_UP_TO = """
SELECT count(*) FROM (
    SELECT 1 FROM events
    WHERE type = 'match_created' AND data ->> 'ladder_id' = %(ladder)s AND position <= %(high)s
    LIMIT %(limit)s) AS probe
"""
ANNULLED = """
SELECT coalesce(array_agg(match_id), '{}') FROM events
WHERE type = 'match_annulled' AND position <= %(high)s
"""
ENDED_CHUNK_ROWS = 50_000
"""match_ended rows per read of a big recompute."""

SMALL_LADDER = 20_000
"""Up to this many matches, a recompute looks the ladder's match_ended events up
by match (the (match_id, version) index) instead of scanning every ladder's."""


def read_chunks(
    cur: psycopg.Cursor[Any],
    query: str,
    params: dict[str, Any],
    *,
    once: bool = False,
    ahead: int = 2,
    parse: Callable[..., Any] | None = None,
) -> Generator[Any, None, None]:
    """The chunks of a read (``CREATED_CHUNK``, ``ended_chunk``), each its row
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

    return read_ahead(read, once=once, ahead=ahead)


def _int8s(raw: bytes) -> list[int]:
    values = array("q")
    values.frombytes(raw)
    if _LITTLE_ENDIAN:
        values.byteswap()
    return values.tolist()


InOrder = tuple[list[str], list[int], bytes, list[int] | None]


def in_order(ids: str, tags: bytes | None, periods: bytes | None = None) -> InOrder:
    """A chunk of results (``ended_chunk``): the match ids, seat 0's tags, seat
    0's codes and (when read) the rating periods, in position order."""
    match_ids = ids.split("\t")
    tags = tags or b""  # NULL: no valid winner at all
    tags0 = _int8s(tags)
    codes = tags[7::8]  # the tag's lowest byte
    if len(tags0) != len(match_ids):
        raise ValueError("a match_ended event whose winner is neither 0, 1 nor null")
    by_period = None if periods is None else _int8s(periods)
    if not all(map(lt, tags0, islice(tags0, 1, None))):
        # PostgreSQL aggregates in the order of the subquery; were it ever not so
        order = sorted(range(len(tags0)), key=tags0.__getitem__)
        match_ids = list(map(match_ids.__getitem__, order))
        tags0 = list(map(tags0.__getitem__, order))
        codes = bytes(map(codes.__getitem__, order))
        if by_period is not None:
            by_period = list(map(by_period.__getitem__, order))
    return match_ids, tags0, codes, by_period


def read_ahead(
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
