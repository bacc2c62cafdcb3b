"""Who is watching a match, and under which ladder settings.

The viewer is the caller's seat when they play in this match, else a
spectator (administrators too: during a match nobody may see hidden cards,
and after it the replay shows spectators everything the ladder allows).
"""

from __future__ import annotations

from typing import Any

import msgspec

from schemas.events import MatchCreated
from service.api.auth import player_by_token
from service.errors import NotFound, Unauthorized, ValidationFailed
from service.live.stream import Viewer


class Access(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    viewer: Viewer
    player_id: str | None
    players: tuple[str, str]
    spectator_delay_s: float = 0.0
    hide_hands_in_replay: bool = False


def parse_since(raw: str | None) -> int:
    """``since`` (or ``Last-Event-ID``): a version number >= 0; absent means 0."""
    if raw is None or raw == "":
        return 0
    text = raw.strip()
    if not text.isdigit() or len(text) > 9:
        raise ValidationFailed("since must be a version number (a whole number >= 0).")
    return int(text)


def token_from_header(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("The Authorization header must be 'Bearer <token>'.")
    return token.strip()


async def resolve(pool: Any, store: Any, match_id: str, token: str | None) -> Access:
    """The viewer of ``match_id`` holding ``token`` (None: an anonymous spectator)."""
    first = await store.load(match_id, after=0, limit=1)
    if not first or not isinstance(first[0].event, MatchCreated):
        raise NotFound("No match has this id.")
    created: MatchCreated = first[0].event
    player_id: str | None = None
    delay = 0.0
    hide = False
    async with pool.connection() as conn:
        if token is not None:
            player = await player_by_token(conn, token)
            if player is None:
                raise Unauthorized("This token is not valid.")
            player_id = player.id
        if created.ladder_id is not None:
            cur = await conn.execute(
                "SELECT spectator_delay_s, hide_hands_in_replay FROM ladders WHERE id = %s",
                (created.ladder_id,),
            )
            row = await cur.fetchone()
            if row is not None:
                delay, hide = float(row[0]), bool(row[1])
    viewer: Viewer = "spectator"
    if player_id == created.players[0]:
        viewer = 0
    elif player_id == created.players[1]:
        viewer = 1
    return Access(
        match_id=match_id,
        viewer=viewer,
        player_id=player_id,
        players=created.players,
        spectator_delay_s=delay,
        hide_hands_in_replay=hide,
    )
