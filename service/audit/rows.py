"""The rows of a match's log as stored (the store's reader, ``matchlog.log_of_match``).

Deliberately not ``EventStore.load``: a Struct decoder drops fields it does
not know and normalises what it reads, so it could hide the very change an
audit looks for. Here every column comes back as stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from psycopg import AsyncConnection

from service.store import matchlog
from service.store.matchlog import LogRow
from service.store.ops import run_async


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


def _row(stored: LogRow) -> RawRow:
    return RawRow(
        position=stored.position,
        match_id=stored.match_id,
        version=stored.version,
        type=stored.type,
        # msgspec parses the text several times faster than psycopg's json loader
        data=msgspec.json.decode(stored.data),
        actor=stored.actor,
        recorded_at=stored.recorded_at,
        prev_hash=stored.prev_hash,
        hash=stored.hash,
        key_id=stored.key_id,
        signature=stored.signature,
    )


async def match_rows(conn: AsyncConnection[Any], match_id: str) -> list[RawRow]:
    """Every row of one match, in version order (the order the chain links them)."""
    return [_row(r) for r in await run_async(conn, matchlog.log_of_match(match_id))]


async def match_ids(conn: AsyncConnection[Any], ladder_id: str | None = None) -> list[str]:
    """Every match in the store (or of one ladder), oldest first."""
    if ladder_id is None:
        return await run_async(conn, matchlog.every_match())
    return await run_async(conn, matchlog.matches_of_ladder(ladder_id))
