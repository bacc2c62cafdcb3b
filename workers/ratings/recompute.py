"""The full recompute of a ladder from its log: the fast path of both systems.

Reads, in chunks that PostgreSQL packs into one row each (reads.py): the
ladder's match_created rows on a second connection, every match_ended row in
position order on the job's own connection at the same time (a ladder of at
most ``SMALL_LADDER`` matches looks its results up by match instead). Players
become small integers once (``Roster``); each chunk of results becomes seat
lists, scores and tags mapped in C, split where a season starts or ends; the
system's fold rates them (elo_fold.py, glicko2_fold.py) and copy_out.py writes
the tables in COPY's binary format.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable, Generator, Sequence
from itertools import compress, count
from operator import add
from typing import Any

import psycopg

from service.evidence.guard import forged_results
from service.ratings.elo import EloSettings
from service.ratings.glicko2 import Glicko2Settings
from service.ratings.settings import RatingSettings
from workers.ratings import reads
from workers.ratings.codes import ABORTED, FLIP_OF_CODE, SCORE_OF_CODE
from workers.ratings.copy_out import (
    RATINGS_COLUMNS,
    WRITE_BLOCK,
    write_elo,
    write_history_blocks,
)
from workers.ratings.elo_fold import Reset, Roster, SelfMatchError, rate_chunks
from workers.ratings.glicko2_fold import Boundary, history_block, rate_periods, table_row

log = logging.getLogger("matcha.workers.ratings")

PROGRESS_EVERY = 50_000
"""Matches between two progress reports in the job's meta."""

Progress = Callable[[str, int, int], None]
Boundaries = Sequence[tuple[int, float | None]]
"""Season boundaries in log order: ``(position, soft reset)``; None: a season's end."""

GLICKO_COLUMNS = (
    RATINGS_COLUMNS + ", rd, volatility, period, period_open, base_rating, base_rd,"
    " base_volatility, base_period, v_sum, d_sum, period_games"
)
_GLICKO_TYPES = [
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
    "float8",
    "float8",
    "int8",
    "bool",
    "float8",
    "float8",
    "float8",
    "int8",
    "float8",
    "float8",
    "int4",
]


def _rated(number: int | None, code: int) -> bool:
    return number is not None and code != ABORTED


def recompute(
    conn: psycopg.Connection[Any],
    reader: psycopg.Connection[Any],
    ladder_id: str,
    settings: RatingSettings,
    high: int,
    report: Progress,
    boundaries: Boundaries = (),
) -> tuple[int, int | None] | None:
    """Rebuild the ladder's tables from the log up to ``high``: ``(matches rated,
    the ladder's rating period)``, or None when a match against oneself is in the
    log (the caller then rates the log with the reference implementation)."""
    glicko_settings = settings if isinstance(settings, Glicko2Settings) else None
    glicko = glicko_settings is not None
    rcur = reader.cursor()
    params: dict[str, Any] = {"ladder": ladder_id, "high": high, "rows": reads.ENDED_CHUNK_ROWS}
    if glicko_settings is not None:
        params["period_us"] = glicko_settings.period_us
    params["annulled"] = rcur.execute(reads.ANNULLED, params).fetchone()[0]  # type: ignore[index]
    # results no service signature covers (a clone, a forged end) count as annulled
    params["annulled"] += forged_results(rcur, ladder_id, high)
    parse = reads.in_order
    # A big ladder scans every match_ended row: that read starts now, on the
    # job's own connection (idle until the write), side by side with the
    # match_created read on the reader, so two PostgreSQL backends work at
    # once. Its chunks wait in memory until the seats are known.
    ended = None
    if reader is not conn:
        probe = {**params, "limit": reads.SMALL_LADDER + 1}
        size = rcur.execute(reads.LADDER_SIZE_UP_TO, probe).fetchone()[0]  # type: ignore[index]
        if size > reads.SMALL_LADDER:
            ended = reads.read_chunks(
                conn.cursor(binary=True), reads.ended_chunk(glicko), params, ahead=0, parse=parse
            )

    # 1. The ladder's matches, annulled ones left out: match id -> its number,
    #    number -> each seat's player index (so a chunk of results maps in C).
    roster = Roster()
    index = roster.__getitem__
    number_of: dict[str, int] = {}  # match id -> its number in these lists
    seat0_of: list[int] = []
    seat1_of: list[int] = []
    for (text,) in reads.read_chunks(rcur, reads.CREATED_CHUNK, params):
        fields = text.split("\t")
        number_of.update(zip(fields[0::3], count(len(seat0_of))))
        seat0_of += map(index, fields[1::3])
        seat1_of += map(index, fields[2::3])
    total = len(number_of)
    report("rating", 0, total)

    # 2. Every result in committed order. A small ladder's are looked up by
    #    match; a big one's come from scanning every match_ended event, and
    #    other ladders' matches (not in the seats) and aborted ones are dropped here.
    bcur = reader.cursor(binary=True)
    if ended is not None:
        results = ended
    elif total <= reads.SMALL_LADDER:
        results = reads.read_chunks(
            bcur,
            reads.ended_of(glicko),
            {**params, "matches": list(number_of)},
            once=True,
            parse=parse,
        )
    else:
        results = reads.read_chunks(bcur, reads.ended_chunk(glicko), params, parse=parse)
    rated_so_far = [0]
    marks = list(boundaries)

    def chunks() -> Generator[Any, None, None]:
        for ids, tags0, codes, periods in results:
            numbers: list[Any] = list(map(number_of.get, ids))
            if None in numbers or ABORTED in codes:  # another ladder's, annulled or aborted
                mine = list(map(_rated, numbers, codes))
                numbers = list(compress(numbers, mine))
                tags0 = list(compress(tags0, mine))
                codes = bytes(compress(codes, mine))
                if periods is not None:
                    periods = list(compress(periods, mine))
            if not numbers:
                continue
            columns = [
                list(map(seat0_of.__getitem__, numbers)),
                list(map(seat1_of.__getitem__, numbers)),
                list(map(SCORE_OF_CODE.__getitem__, codes)),
                tags0,
                list(map(add, tags0, map(FLIP_OF_CODE.__getitem__, codes))),
            ]
            if glicko:
                columns.append(periods)
            # a season's boundary inside this chunk splits it
            start = 0
            while marks and marks[0][0] < tags0[-1] >> 8:
                position, fraction = marks.pop(0)
                cut = bisect_right(tags0, position * 256 + 255)
                if cut > start:
                    yield tuple(c[start:cut] for c in columns)
                start = cut
                yield (
                    Boundary(fraction)
                    if glicko
                    else Reset(fraction)
                    if fraction is not None
                    else None
                )
            if start < len(tags0):
                yield tuple(c[start:] for c in columns) if start else tuple(columns)
            before = rated_so_far[0]
            rated_so_far[0] += len(numbers)
            if rated_so_far[0] // PROGRESS_EVERY != before // PROGRESS_EVERY:
                report("rating", rated_so_far[0], total)
        for _position, fraction in marks:  # boundaries after the last result
            yield (
                Boundary(fraction)
                if glicko
                else (Reset(fraction) if fraction is not None else None)
            )

    stream = (c for c in chunks() if c is not None)
    try:
        if glicko_settings is not None:
            gfold = rate_periods(stream, len(roster), glicko_settings)
        else:
            assert isinstance(settings, EloSettings)
            efold = rate_chunks(stream, len(roster), settings)
    except SelfMatchError:
        return None
    finally:
        stream.close()
        results.close()  # every read is over: the job's connection is free
    wcur = conn.cursor()
    wcur.execute("DELETE FROM rating_histories WHERE ladder_id = %s", (ladder_id,))
    wcur.execute("DELETE FROM ratings WHERE ladder_id = %s", (ladder_id,))
    report("writing", rated_so_far[0], rated_so_far[0])
    player_ids = list(roster)
    if glicko_settings is None:
        assert isinstance(settings, EloSettings)
        write_elo(wcur, ladder_id, player_ids, efold, settings)
        return rated_so_far[0], None
    rated = [p for p in range(len(player_ids)) if gfold.tags[p]]

    def histories() -> Generator[Any, None, None]:
        for start in range(0, len(rated), WRITE_BLOCK):
            players = rated[start : start + WRITE_BLOCK]
            ids = [player_ids[p] for p in players]
            yield ids, [gfold.tags[p] for p in players], history_block(gfold, players)

    write_history_blocks(wcur, ladder_id, histories())
    with wcur.copy(f"COPY ratings ({GLICKO_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(_GLICKO_TYPES)
        for p in rated:
            copy.write_row((ladder_id, player_ids[p], *table_row(gfold, p, glicko_settings)))
    return rated_so_far[0], (gfold.ladder_period if gfold.ladder_period >= 0 else None)
