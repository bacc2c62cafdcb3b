"""Writing a recomputed ladder: ``ratings`` and ``rating_histories`` by binary COPY.

The history goes one row per player (their matches as parallel arrays), laid
out for a block of players at once by strided slices (layout.py), in blocks of
``WRITE_BLOCK`` players handed to a thread that writes them to the connection
(psycopg's ``QueuedLibpqWriter``) while the next block is laid out.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

import psycopg
from psycopg.copy import QueuedLibpqWriter

from service.ratings.elo import EloSettings
from workers.ratings.elo_fold import Fold, befores, folded_table, reset_entries
from workers.ratings.layout import (
    ARRAY_HEADER,
    BINARY_HEADER,
    BINARY_TRAILER,
    FIELD,
    FLOAT8_OID,
    INT8_OID,
    LITTLE_ENDIAN,
    SCORE_BYTE0,
    SCORE_BYTE1,
    cells,
    cells_of,
    little_endian,
    number_cells,
)

WRITE_BLOCK = 500
"""Players per block of the history COPY: PostgreSQL stores a block while Python
lays out the next."""

_ELO_ROW = struct.pack(">h", 6)  # ladder, player, positions, before, after, scores
_GLICKO_ROW = struct.pack(">h", 9)  # ... and rd_before, rd_after, periods
ELO_HISTORY_COPY = (
    "COPY rating_histories (ladder_id, player_id, positions, before, after, scores)"
    " FROM STDIN (FORMAT BINARY)"
)
GLICKO_HISTORY_COPY = (
    "COPY rating_histories (ladder_id, player_id, positions, before, after, scores,"
    " rd_before, rd_after, periods) FROM STDIN (FORMAT BINARY)"
)
RATINGS_COLUMNS = (
    "ladder_id, player_id, rating, games, wins, draws, losses, peak, reached_master,"
    " provisional, timeouts"
)
_RATINGS_TYPES = [
    "text",
    "text",
    "float8",
    "int4",
    "int4",
    "int4",
    "int4",
    "float8",
    "bool",
    "bool",
    "int4",
]


def _tag_cells(tags: array[int]) -> tuple[memoryview, memoryview]:
    """The ``positions`` and ``scores`` elements of a run of tags: a tag's
    little-endian bytes are the code, then the position's bytes."""
    n = len(tags)
    raw = little_endian(tags)
    codes = raw[0::8]
    # the position is the tag's bytes 1 to 7 (the highest is 0): big-endian, 0 then bytes 7 .. 1
    positions = memoryview(cells([None, *(raw[k::8] for k in range(7, 0, -1))], n))
    scores = memoryview(cells([codes.translate(SCORE_BYTE0), codes.translate(SCORE_BYTE1)], n))
    return positions, scores


def write_elo(
    cur: psycopg.Cursor[Any],
    ladder_id: str,
    player_ids: list[Any],
    fold: Fold,
    settings: EloSettings,
) -> None:
    """COPY the folded Elo ladder into ``rating_histories`` and ``ratings``."""
    rated = [p for p, theirs in enumerate(fold.afters) if theirs]
    initial_cell = b"\x00\x00\x00\x08" + struct.pack(">d", settings.initial)
    ladder_field = _text_field(ladder_id)
    with cur.copy(ELO_HISTORY_COPY, writer=QueuedLibpqWriter(cur)) as copy:
        copy.write(BINARY_HEADER)
        for start in range(0, len(rated), WRITE_BLOCK):
            players = rated[start : start + WRITE_BLOCK]
            copy.write(
                _elo_rows(ladder_field, player_ids, players, fold, initial_cell, settings.initial)
            )
        copy.write(BINARY_TRAILER)
    provisional_games = settings.provisional_until
    with cur.copy(f"COPY ratings ({RATINGS_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(_RATINGS_TYPES)
        for p, row in folded_table(fold, settings):
            *stats, timeouts = row
            copy.write_row((ladder_id, player_ids[p], *stats, row[1] < provisional_games, timeouts))


def _text_field(text: Any) -> bytes:
    raw = str(text).encode()
    return FIELD(len(raw)) + raw


def _elo_rows(
    ladder_field: bytes,
    player_ids: list[Any],
    players: list[int],
    fold: Fold,
    initial_cell: bytes,
    initial: float,
) -> bytes:
    """The ``rating_histories`` rows of ``players`` in COPY's binary format.

    Their entries are laid out one after the other, each column at once:
    ``after`` from the ratings (big-endian doubles), ``positions`` and
    ``scores`` from the tags, ``before`` as each player's initial rating and
    their ``after`` but the last (patched where a season's soft reset came in
    between). A player's arrays are then a header and a slice.
    """
    after = array("d")
    tags = array("q")
    for p in players:
        after += fold.afters[p]
        tags += fold.tags[p]
    n = len(after)
    if LITTLE_ENDIAN:
        after.byteswap()
    raw = after.tobytes()
    after_cells = memoryview(cells([raw[k::8] for k in range(8)], n))
    position_cells, score_cells = _tag_cells(tags)
    block: list[Any] = []
    first = 0
    for p in players:
        g = len(fold.afters[p])
        lo, hi = 12 * first, 12 * (first + g)
        int8s = ARRAY_HEADER(1, 0, INT8_OID, g, 1)
        float8s = ARRAY_HEADER(1, 0, FLOAT8_OID, g, 1)
        size = FIELD(20 + 12 * g)
        before: Sequence[Any] = (initial_cell, after_cells[lo : hi - 12])
        if reset_entries(fold, p):  # a season's soft reset came between two matches
            before = (cells_of(array("d", befores(fold, p, initial))),)
        block += (
            _ELO_ROW, ladder_field, _text_field(player_ids[p]),
            size, int8s, position_cells[lo:hi],
            size, float8s, *before,
            size, float8s, after_cells[lo:hi],
            size, float8s, score_cells[lo:hi],
        )  # fmt: skip
        first += g
    return b"".join(block)


GlickoBlock: TypeAlias = "tuple[list[Any], list[array[int]], Sequence[Any]]"
"""A block of players' Glicko-2 histories: their ids, their tags, and the block's
before, after, RD before, RD after (float64) and period (int64) columns, one entry
per match, the players one after the other (``glicko2_fold.history_block``)."""


def write_history_blocks(
    cur: psycopg.Cursor[Any], ladder_id: str, blocks: Iterable[GlickoBlock]
) -> None:
    """COPY Glicko-2 histories, a block of players at a time (``WRITE_BLOCK``):
    each column laid out for the whole block at once, then a slice per player."""
    ladder_field = _text_field(ladder_id)
    with cur.copy(GLICKO_HISTORY_COPY, writer=QueuedLibpqWriter(cur)) as copy:
        copy.write(BINARY_HEADER)
        for block in blocks:
            copy.write(_glicko_rows(ladder_field, *block))
        copy.write(BINARY_TRAILER)


def _glicko_rows(
    ladder_field: bytes, player_ids: list[Any], tags_of: list[array[int]], columns: Sequence[Any]
) -> bytes:
    tags = array("q")
    for theirs in tags_of:
        tags += theirs
    positions, scores = _tag_cells(tags)
    before, after, rd_before, rd_after, period_cells = (
        memoryview(number_cells(column)) for column in columns
    )
    out: list[Any] = []
    first = 0
    for player_id, theirs in zip(player_ids, tags_of, strict=True):
        g = len(theirs)
        lo, hi = 12 * first, 12 * (first + g)
        int8s = ARRAY_HEADER(1, 0, INT8_OID, g, 1)
        float8s = ARRAY_HEADER(1, 0, FLOAT8_OID, g, 1)
        size = FIELD(20 + 12 * g)
        out += (
            _GLICKO_ROW, ladder_field, _text_field(player_id),
            size, int8s, positions[lo:hi],
            size, float8s, before[lo:hi],
            size, float8s, after[lo:hi],
            size, float8s, scores[lo:hi],
            size, float8s, rd_before[lo:hi],
            size, float8s, rd_after[lo:hi],
            size, int8s, period_cells[lo:hi],
        )  # fmt: skip
        first += g
    return b"".join(out)
