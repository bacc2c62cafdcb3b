"""A player's current rating on a ladder, for the matchmaking queue.

One small function so the ratings part (migration 0003, workers/elo.py) can
own it later: until its ``ratings`` table exists, every player stands at the
ladder's initial rating.
"""

from __future__ import annotations

from psycopg import AsyncConnection


async def rating_of(conn: AsyncConnection, ladder_id: str, player_id: str) -> float:
    cur = await conn.execute("SELECT to_regclass('ratings') IS NOT NULL")
    row = await cur.fetchone()
    if row and row[0]:
        cur = await conn.execute(
            "SELECT rating FROM ratings WHERE ladder_id = %s AND player_id = %s",
            (ladder_id, player_id),
        )
        found = await cur.fetchone()
        if found is not None:
            return float(found[0])
    cur = await conn.execute(
        "SELECT (rating->>'initial')::float FROM ladders WHERE id = %s", (ladder_id,)
    )
    initial = await cur.fetchone()
    return float(initial[0]) if initial else 1500.0
