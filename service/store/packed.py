"""The ratings recompute's bulk reads of the match log, packed one chunk per row.

Part of the one reader of the log (``service.store.matchlog``): the statements
``workers.ratings.reads.read_chunks`` pages through (keyset paging on the
position each returns first), kept here with the rest of the SQL on ``events``.
The format each chunk ships in is documented with each statement; docs/ratings.md
explains the whole read.
"""

from __future__ import annotations

from typing import Final

# The full recompute's reads. PostgreSQL extracts only the fields the Elo
# needs and ships a whole chunk in one row: text fields joined by tabs in ONE
# string (Python splits it once, in C, and takes the columns with strided
# slices: no message and no split per row; ids are generated, no tab in them),
# numbers as one bytea of 8-byte big-endian integers (an array('q') at once).
# Big reads come in chunks (keyset paging on the position) that a thread
# fetches while Python works on the previous one. The ladder's matches may come
# in any order within a chunk (they are only numbered): no sort for them.
CREATED_CHUNK: Final = """
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
PERIOD: Final = "(date_part('epoch', recorded_at) * 1000000)::bigint / %(period_us)s"
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


LADDER_SIZE_UP_TO: Final = """
SELECT count(*) FROM (
    SELECT 1 FROM events
    WHERE type = 'match_created' AND data ->> 'ladder_id' = %(ladder)s AND position <= %(high)s
    LIMIT %(limit)s) AS probe
"""
ANNULLED: Final = """
SELECT coalesce(array_agg(match_id), '{}') FROM events
WHERE type = 'match_annulled' AND position <= %(high)s
"""
