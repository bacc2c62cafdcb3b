"""The rows of a match's log, read straight from the events table with SQL.

Deliberately not ``EventStore.load``: a Struct decoder drops fields it does
not know and normalises what it reads, so it could hide the very change an
audit looks for. Here every column comes back as stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from psycopg import AsyncConnection


class RawRow(msgspec.Struct, frozen=True, kw_only=True):
    position: int
    match_id: str
    version: int
    type: str
    data: dict[str, Any]
    actor: str | None
    recorded_at: datetime
    prev_hash: bytes
    hash: bytes
    key_id: str | None = None
    signature: bytes | None = None
    """The service's signature of this row's head (the last row of an append), else None."""


COLUMNS = (
    "position, match_id, version, type, data::text, actor, recorded_at, prev_hash, hash,"
    " key_id, signature"
)
"""``data`` as text: msgspec parses it several times faster than psycopg's json loader."""


def _row(values: tuple[Any, ...]) -> RawRow:
    (
        position,
        match_id,
        version,
        type_,
        text,
        actor,
        recorded_at,
        prev_hash,
        hash_,
        key_id,
        signature,
    ) = values
    data = msgspec.json.decode(text)
    return RawRow(
        position=position,
        match_id=match_id,
        version=version,
        type=type_,
        data=data if isinstance(data, dict) else {"_not_an_object": data},
        actor=actor,
        recorded_at=recorded_at,
        prev_hash=bytes(prev_hash),
        hash=bytes(hash_),
        key_id=key_id,
        signature=None if signature is None else bytes(signature),
    )


async def match_rows(conn: AsyncConnection[Any], match_id: str) -> list[RawRow]:
    """Every row of one match, in version order (the order the chain links them)."""
    cur = await conn.execute(
        f"SELECT {COLUMNS} FROM events WHERE match_id = %s ORDER BY version, position",
        (match_id,),
    )
    return [_row(r) for r in await cur.fetchall()]


async def match_ids(conn: AsyncConnection[Any], ladder_id: str | None = None) -> list[str]:
    """Every match in the store (or of one ladder), oldest first."""
    if ladder_id is None:
        cur = await conn.execute(
            "SELECT match_id FROM events WHERE type = 'match_created' ORDER BY position"
        )
    else:
        cur = await conn.execute(
            "SELECT match_id FROM events WHERE type = 'match_created'"
            " AND data->>'ladder_id' = %s ORDER BY position",
            (ladder_id,),
        )
    return [r[0] for r in await cur.fetchall()]
