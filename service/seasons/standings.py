"""A season's standings, from the ratings projection's history: every player
who played a rated match in the season, by their rating after their last one.

Used by the worker to freeze a season's standings once the projection has
passed the season's end (the history's entries up to the end are final then:
the end closes every rating period), and by the API for a running season.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schemas.seasons import FrozenStanding

SEASON_ENTRIES = """
SELECT h.player_id, u.position, u.after, u.rd_after, u.score
FROM rating_histories h
CROSS JOIN LATERAL unnest(h.positions, h.after, h.rd_after, h.scores)
    AS u(position, after, rd_after, score)
WHERE h.ladder_id = %(ladder)s AND u.position > %(start)s AND u.position <= %(end)s
"""


def ranked(rows: Iterable[tuple[Any, ...]]) -> tuple[FrozenStanding, ...]:
    """Rows ``(player, position, after, rd_after, score)`` -> the standings, best first
    (ties by player id)."""
    last: dict[str, tuple[int, float, float | None]] = {}
    counts: dict[str, list[int]] = {}
    for player, position, after, rd_after, score in rows:
        if player not in last or position > last[player][0]:
            last[player] = (position, after, rd_after)
        c = counts.setdefault(player, [0, 0, 0])
        c[0 if score == 1.0 else (2 if score == 0.0 else 1)] += 1
    order = sorted(last, key=lambda p: (-last[p][1], p))
    return tuple(
        FrozenStanding(
            rank=k,
            player_id=p,
            rating=last[p][1],
            rd=last[p][2],
            games=sum(counts[p]),
            wins=counts[p][0],
            draws=counts[p][1],
            losses=counts[p][2],
        )
        for k, p in enumerate(order, start=1)
    )
