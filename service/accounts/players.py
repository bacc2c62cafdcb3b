"""Players: their bearer tokens, their roles, and the bootstrap of the first admin.

A token is 32 random bytes (URL-safe base64) shown once at registration; the
database keeps only its SHA-256, so reading the players table never lets
anyone act as a player. Lookups compare hashes through the unique index.
``caller_of`` turns a player into the viewer policy's caller.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Final, Literal, TypeAlias

import msgspec
from psycopg import AsyncConnection
from psycopg.errors import UniqueViolation

from service.cache import Bounded
from service.errors import Conflict, ValidationFailed
from service.matches import Caller, new_id

Role: TypeAlias = Literal["player", "organiser", "admin"]
ROLES: Final[tuple[Role, ...]] = ("player", "organiser", "admin")


class Player(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    roles: tuple[str, ...]

    def has(self, role: str) -> bool:
        return role in self.roles


def caller_of(player: Player | None) -> Caller:
    """The viewer policy's caller for a signed-in player (or anonymous for None)."""
    if player is None:
        return Caller()
    return Caller(player_id=player.id, roles=frozenset(player.roles))


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _player(row: tuple[str, str, list[str]]) -> Player:
    return Player(id=row[0], name=row[1], roles=tuple(row[2]))


async def player_by_token(conn: AsyncConnection, token: str) -> Player | None:
    """The token's player; None for an unknown token or an account closed for fair
    play (docs/fairplay.md: it signs in no more; its pages and records stay public)."""
    cur = await conn.execute(
        "SELECT id, name, roles FROM players p WHERE token_hash = %s"
        " AND NOT EXISTS (SELECT 1 FROM fairplay_closed c WHERE c.player_id = p.id)",
        (token_hash(token),),
    )
    row = await cur.fetchone()
    return _player(row) if row else None


class TokenCache:
    """Who a token belongs to, remembered for ``ttl_s`` seconds per process.

    Saves a query on every request. A role change made by this process is
    seen at once (``forget``); one made through another API process is seen
    there within ``ttl_s``. Unknown tokens are never cached.
    """

    def __init__(self, ttl_s: float = 5.0, size: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self._entries: Bounded[bytes, tuple[float, Player]] = Bounded(size)

    def get(self, token: str) -> Player | None:
        key = token_hash(token)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            self._entries.pop(key)
            return None
        return entry[1]

    def put(self, token: str, player: Player) -> None:
        self._entries.put(token_hash(token), (time.monotonic() + self.ttl_s, player))

    def forget(self, player_id: str) -> None:
        self._entries.drop(lambda _, entry: entry[1].id != player_id)


async def player_by_id(conn: AsyncConnection, player_id: str) -> Player | None:
    cur = await conn.execute("SELECT id, name, roles FROM players WHERE id = %s", (player_id,))
    row = await cur.fetchone()
    return _player(row) if row else None


async def register(conn: AsyncConnection, name: str) -> tuple[Player, str]:
    """Create a player with role ``player``; return it and its token (shown once)."""
    name = name.strip()
    if not name:
        raise ValidationFailed("A player's name must not be empty.")
    token = new_token()
    try:
        cur = await conn.execute(
            "INSERT INTO players (id, name, roles, token_hash) VALUES (%s, %s, %s, %s)"
            " RETURNING id, name, roles",
            (new_id(), name, ["player"], token_hash(token)),
        )
    except UniqueViolation as exc:
        raise Conflict(f"The name {name!r} is taken.", code="name_taken") from exc
    row = await cur.fetchone()
    assert row is not None
    return _player(row), token


async def set_roles(conn: AsyncConnection, player_id: str, roles: list[str]) -> Player | None:
    """Replace a player's roles (``player`` is always kept)."""
    wanted = ["player", *sorted({r for r in roles if r != "player"})]
    cur = await conn.execute(
        "UPDATE players SET roles = %s WHERE id = %s RETURNING id, name, roles",
        (wanted, player_id),
    )
    row = await cur.fetchone()
    return _player(row) if row else None


async def bootstrap_admin(conn: AsyncConnection, name: str, token: str) -> Player:
    """Make sure player ``name`` exists with role admin and answers to ``token``.

    Idempotent, so every API process may run it at start (several uvicorn
    workers start at once: the upsert is one statement, no read-then-write).
    """
    cur = await conn.execute(
        """
        INSERT INTO players (id, name, roles, token_hash)
        VALUES (%s, %s, ARRAY['player', 'admin'], %s)
        ON CONFLICT (name) DO UPDATE
           SET token_hash = EXCLUDED.token_hash,
               roles = CASE WHEN 'admin' = ANY(players.roles) THEN players.roles
                            ELSE players.roles || ARRAY['admin'] END
        RETURNING id, name, roles
        """,
        (new_id(), name, token_hash(token)),
    )
    row = await cur.fetchone()
    assert row is not None
    return _player(row)
