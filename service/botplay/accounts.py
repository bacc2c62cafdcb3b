"""The bots' player accounts: one per search level (``service.bots.levels.LEVELS``).

A bot is an ordinary player in the log: its id sits in ``MatchCreated.players``
and is the actor of its commands, so replays, audits and records need nothing
new. Nobody holds its token (the stored hash is of random bytes thrown away),
so only the service acts for it, through the match core. Its only role is
``bot``: it cannot organise, administer or join a ladder through the API.

Every API process makes sure the accounts exist at start; the statements are
idempotent and serialised by an advisory lock, so several processes starting
together create each account once.
"""

from __future__ import annotations

import secrets
from typing import Final

import msgspec
from psycopg import AsyncConnection

from service.accounts.players import Player, token_hash
from service.bots.levels import LEVELS

BOT_ROLE: Final = "bot"
_LOCK: Final = 0x6D6174_6362_6F74  # "matcbot": serialises account creation across processes


class BotAccount(msgspec.Struct, frozen=True, kw_only=True):
    level: str
    player_id: str
    name: str

    @property
    def player(self) -> Player:
        return Player(id=self.player_id, name=self.name, roles=(BOT_ROLE,))


class BotAccounts(msgspec.Struct, frozen=True, kw_only=True):
    by_level: dict[str, BotAccount]

    def of_player(self, player_id: str) -> BotAccount | None:
        for account in self.by_level.values():
            if account.player_id == player_id:
                return account
        return None

    @property
    def player_ids(self) -> list[str]:
        return [a.player_id for a in self.by_level.values()]


def bot_name(level: str, attempt: int) -> str:
    base = f"Matcha bot ({level})"
    return base if attempt == 0 else f"{base} #{attempt + 1}"


async def ensure_bot_accounts(conn: AsyncConnection) -> BotAccounts:
    """Create the missing bot accounts; all of them, by level."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        cur = await conn.execute("SELECT level FROM bot_players")
        have = {row[0] for row in await cur.fetchall()}
        for level in LEVELS:
            if level in have:
                continue
            player_id = f"bot-{level}"
            # A person may already go by the bot's name: then the bot takes the next one.
            for attempt in range(100):
                cur = await conn.execute(
                    "INSERT INTO players (id, name, roles, token_hash) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING RETURNING id",
                    (
                        player_id,
                        bot_name(level, attempt),
                        [BOT_ROLE],
                        token_hash(secrets.token_hex(32)),
                    ),
                )
                if await cur.fetchone() is not None:
                    break
                cur = await conn.execute("SELECT 1 FROM players WHERE id = %s", (player_id,))
                if await cur.fetchone() is not None:
                    break  # the account is there already (its bot_players row is not)
            else:
                raise RuntimeError(f"no free name for the {level} bot's account")
            await conn.execute(
                "INSERT INTO bot_players (level, player_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (level, player_id),
            )
    return await load_bot_accounts(conn)


async def load_bot_accounts(conn: AsyncConnection) -> BotAccounts:
    cur = await conn.execute(
        "SELECT b.level, b.player_id, p.name FROM bot_players b"
        " JOIN players p ON p.id = b.player_id ORDER BY b.level"
    )
    rows = await cur.fetchall()
    return BotAccounts(
        by_level={
            level: BotAccount(level=level, player_id=pid, name=name) for level, pid, name in rows
        }
    )
