"""A ladder's season stream in ``ladder_events``: load it, append to it.

Hash-chained like the match events, with ``service.store.chain.row_hash`` (the
stream id ``ladder:<id>`` in the place of the match id); ``(ladder_id,
version)`` is unique, so of two racing appends one gets ``VersionConflict``
and writes nothing. Blocking (the workers) and async (the API) twins share the SQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import psycopg
from psycopg import AsyncConnection

from schemas.seasons import LadderEvent, ladder_event_decoder, ladder_event_encoder
from service.errors import VersionConflict
from service.store.chain import GENESIS_HASH, row_hash

_LOAD = "SELECT version, data::text, hash FROM ladder_events WHERE ladder_id = %s ORDER BY version"
_INSERT = """
INSERT INTO ladder_events (ladder_id, version, type, data, actor, recorded_at, prev_hash, hash)
VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s)
"""


def stream_id(ladder_id: str) -> str:
    return f"ladder:{ladder_id}"


class Loaded(msgspec.Struct, frozen=True):
    events: list[LadderEvent]
    version: int
    head: bytes


def _loaded(rows: list[tuple[Any, ...]]) -> Loaded:
    events = [ladder_event_decoder.decode(r[1]) for r in rows]
    return Loaded(events, rows[-1][0] if rows else 0, bytes(rows[-1][2]) if rows else GENESIS_HASH)


def _rows(
    ladder_id: str, loaded: Loaded, events: list[LadderEvent], actor: str
) -> list[tuple[Any, ...]]:
    at = datetime.now(UTC)
    prev = loaded.head
    rows = []
    for k, event in enumerate(events, start=loaded.version + 1):
        data = ladder_event_encoder.encode(event)
        h = row_hash(
            prev,
            match_id=stream_id(ladder_id),
            version=k,
            actor=actor,
            recorded_at=at,
            event_bytes=data,
        )
        tag = type(event).__struct_config__.tag
        rows.append((ladder_id, k, tag, data.decode(), actor, at, prev, h))
        prev = h
    return rows


def load(conn: psycopg.Connection[Any], ladder_id: str) -> Loaded:
    return _loaded(conn.execute(_LOAD, (ladder_id,)).fetchall())


def append(
    conn: psycopg.Connection[Any],
    ladder_id: str,
    loaded: Loaded,
    events: list[LadderEvent],
    actor: str,
) -> None:
    try:
        with conn.cursor() as cur:
            cur.executemany(_INSERT, _rows(ladder_id, loaded, events, actor))
    except psycopg.errors.UniqueViolation as exc:
        raise VersionConflict("The ladder's seasons changed meanwhile; try again.") from exc


async def load_async(conn: AsyncConnection[Any], ladder_id: str) -> Loaded:
    cur = await conn.execute(_LOAD, (ladder_id,))
    return _loaded(await cur.fetchall())


async def append_async(
    conn: AsyncConnection[Any],
    ladder_id: str,
    loaded: Loaded,
    events: list[LadderEvent],
    actor: str,
) -> None:
    try:
        async with conn.cursor() as cur:
            await cur.executemany(_INSERT, _rows(ladder_id, loaded, events, actor))
    except psycopg.errors.UniqueViolation as exc:
        raise VersionConflict("The ladder's seasons changed meanwhile; try again.") from exc


def verify(rows: list[tuple[Any, ...]], ladder_id: str) -> bool:
    """Rows ``(version, data, actor, recorded_at, prev_hash, hash)`` form the chain."""
    prev = GENESIS_HASH
    for k, (version, data, actor, recorded_at, prev_hash, hash_) in enumerate(rows, start=1):
        event = ladder_event_decoder.decode(data)
        expected = row_hash(
            prev,
            match_id=stream_id(ladder_id),
            version=version,
            actor=actor,
            recorded_at=recorded_at,
            event_bytes=ladder_event_encoder.encode(event),
        )
        if version != k or bytes(prev_hash) != prev or bytes(hash_) != expected:
            return False
        prev = expected
    return True


LAST_POSITION = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM events_position_seq"
"""A season boundary's ``at_position``: the last position of the match events
taken so far (results at or below it belong before the boundary)."""
