"""Reading a ladder's log for the ratings: the chunked readers.

The statements are the store's (``service.store.packed``, part of the one
reader of the log); they ship a whole chunk of rows in one row (docs/ratings.md):
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

from service.store.packed import (
    ANNULLED,
    CREATED_CHUNK,
    LADDER_SIZE_UP_TO,
    PERIOD,
    ended_chunk,
    ended_of,
)

_LITTLE_ENDIAN = sys.byteorder == "little"

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


__all__ = [
    "ANNULLED",
    "CREATED_CHUNK",
    "ENDED_CHUNK_ROWS",
    "LADDER_SIZE_UP_TO",
    "PERIOD",
    "SMALL_LADDER",
    "ended_chunk",
    "ended_of",
    "in_order",
    "read_ahead",
    "read_chunks",
]
