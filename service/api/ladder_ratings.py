"""A player's current rating on a ladder, for the matchmaking queue.

Owned by the ratings part: ``ratings`` is the projection the workers keep
(migration 0003, workers/ratings.py). A player with no rated match yet stands
at the ladder's initial rating.
"""

from __future__ import annotations

from psycopg import AsyncConnection

from service.ratings.settings import settings_from_json


async def rating_of(conn: AsyncConnection, ladder_id: str, player_id: str) -> float:
    cur = await conn.execute(
        """SELECT r.rating, l.rating
           FROM ladders l
           LEFT JOIN ratings r ON r.ladder_id = l.id AND r.player_id = %s
           WHERE l.id = %s""",
        (player_id, ladder_id),
    )
    row = await cur.fetchone()
    if row is None:
        return settings_from_json(None).initial
    if row[0] is not None:
        return float(row[0])
    return settings_from_json(row[1]).initial
