"""What a record gains when it is served: each player's rating before and after.

Ratings are another projection, which an annulment of an earlier match
changes, so archives never store them; the API (``with_ratings_async``) and
``matcha export`` (``record_with_ratings``) add them from the ratings
projection at the moment they serve a record, with the same query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import psycopg
from psycopg import AsyncConnection

from service.replays.record import Headers, MatchRecord
from service.store import matchlog

RATINGS_OF_MATCH = f"""
SELECT h.player_id, h.before[k.i], h.after[k.i]
FROM {matchlog.RESULTS} e
JOIN rating_histories h ON h.ladder_id = %s AND h.player_id = ANY(%s)
CROSS JOIN LATERAL (SELECT array_position(h.positions, e.position) AS i) k
WHERE e.match_id = %s AND k.i IS NOT NULL
"""
"""(player, rating before, rating after) of a match's players, from the ratings projection."""


def add_ratings(headers: Headers, rows: Sequence[tuple[str, float, float]]) -> Headers:
    """The headers with the players' ratings before and after the match, where known."""
    known = {r[0]: (r[1], r[2]) for r in rows}
    if headers.annulled or not known:
        return headers
    players = tuple(
        msgspec.structs.replace(p, rating_before=known[p.id][0], rating_after=known[p.id][1])
        if p.id in known
        else p
        for p in headers.players
    )
    return msgspec.structs.replace(headers, players=(players[0], players[1]))


def _params(headers: Headers) -> tuple[str | None, list[str], str]:
    return headers.ladder_id, [p.id for p in headers.players], headers.match_id


def record_with_ratings(conn: psycopg.Connection[Any], record: MatchRecord) -> MatchRecord:
    h = record.headers
    if h.ladder_id is None:
        return record
    rows = conn.execute(RATINGS_OF_MATCH, _params(h)).fetchall()
    return msgspec.structs.replace(record, headers=add_ratings(h, rows))


async def with_ratings_async(conn: AsyncConnection[Any], headers: Headers) -> Headers:
    """The headers with each player's rating before and after this match, where known."""
    if headers.ladder_id is None or headers.annulled:
        return headers
    cur = await conn.execute(RATINGS_OF_MATCH, _params(headers))
    return add_ratings(headers, await cur.fetchall())
