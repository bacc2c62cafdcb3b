"""Ladders as the service reads them: a ladder's row (``ladder_by_id``), its
members, the terms its matches are played on (``terms_of``, and ``ladder_terms``
for the match core), and a player's current rating on it (``rating_of``).

Below the adapters: the HTTP routes (``service.api.ladders``, pairing, seasons)
and the tournaments read ladders here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from schemas.rules import DEFAULT_TERMS, MatchTerms, RulesetName, TimeControl
from service.errors import NotFound
from service.matches.facts import LadderTerms
from service.ratings.glicko2 import Glicko2Settings
from service.ratings.settings import RatingSettings, RatingSystem, settings_from_json

LADDER_COLUMNS = (
    "id, name, ruleset, rating, spectator_delay_s, hide_hands_in_replay, dispute_window_s,"
    " created_by, created_at, clock, challenge_clocks"
)


class Ladder(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    ruleset: RulesetName
    rating_system: RatingSystem
    rating: RatingSettings
    spectator_delay_s: int
    hide_hands_in_replay: bool
    dispute_window_s: int
    created_by: str
    created_at: datetime
    clock: TimeControl | None = None
    challenge_clocks: bool = False


class Member(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    name: str
    joined_at: datetime


def ladder_of_row(row: tuple[Any, ...]) -> Ladder:
    rating = settings_from_json(row[3])
    return Ladder(
        id=row[0],
        name=row[1],
        ruleset=row[2],
        rating_system="glicko2" if isinstance(rating, Glicko2Settings) else "elo",
        rating=rating,
        spectator_delay_s=row[4],
        hide_hands_in_replay=row[5],
        dispute_window_s=row[6],
        created_by=row[7],
        created_at=row[8],
        clock=None if row[9] is None else msgspec.convert(row[9], TimeControl),
        challenge_clocks=row[10],
    )


async def ladder_by_id(conn: AsyncConnection, ladder_id: str) -> Ladder:
    """The ladder, or ``NotFound``."""
    cur = await conn.execute(f"SELECT {LADDER_COLUMNS} FROM ladders WHERE id = %s", (ladder_id,))
    row = await cur.fetchone()
    if row is None:
        raise NotFound("No ladder has this id.")
    return ladder_of_row(row)


def terms_of(ladder: Ladder, clock: TimeControl | None = None) -> MatchTerms:
    """The terms a ladder's matches are played on, copied into each match as it is
    created (a ladder's settings never change after creation: no route edits them).
    ``clock``: a challenge's own time control, where the ladder allows one."""
    clock = clock or ladder.clock
    return MatchTerms(
        spectator_delay_s=float(ladder.spectator_delay_s),
        hide_hands_in_replay=ladder.hide_hands_in_replay,
        dispute_window_s=ladder.dispute_window_s,
        clock=UNSET if clock is None else clock,
    )


def ladder_terms(pool: AsyncConnectionPool) -> LadderTerms:
    """``await terms(ladder_id)`` for the match core: the terms of a match created
    before they were copied into it, from its ladder's row (default terms if gone)."""

    async def terms(ladder_id: str) -> MatchTerms:
        async with pool.connection() as conn:
            try:
                return terms_of(await ladder_by_id(conn, ladder_id))
            except NotFound:
                return DEFAULT_TERMS

    return terms


async def is_member(conn: AsyncConnection, ladder_id: str, player_id: str) -> bool:
    cur = await conn.execute(
        "SELECT 1 FROM ladder_members WHERE ladder_id = %s AND player_id = %s",
        (ladder_id, player_id),
    )
    return await cur.fetchone() is not None


async def rating_of(conn: AsyncConnection, ladder_id: str, player_id: str) -> float:
    """A player's current rating on a ladder (for the matchmaking queue and the
    tournaments' seeding): the ratings projection's row (migration 0003, kept by
    ``workers.ratings``), or the ladder's initial rating before their first rated match."""
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
