"""The hash chain that makes tampering with a match's events evident.

Each row's ``hash`` is ``SHA-256(prev_hash || canonical_bytes(row))`` where
``prev_hash`` is the ``hash`` of the same match's previous version (32 zero
bytes for version 1). ``canonical_bytes`` is

    b"matcha-event-chain-v1"
    + field(match_id) + field(str(version)) + field(actor)
    + field(recorded_at) + field(event_bytes)

with ``field(x) = len(x).to_bytes(4, "big") + x`` over UTF-8 bytes, so no
choice of ids can make two different rows share canonical bytes;
``recorded_at`` is the UTC instant as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``; and
``event_bytes`` is ``schemas.events.encode_event(event)`` (msgspec JSON: the
tag first, then every field in ``msgspec.structs.fields`` order, no whitespace).
docs/event-store.md repeats this.

The stored ``data`` is JSONB, which reorders keys; the canonical bytes are
therefore recomputed by decoding ``data`` into the event and encoding it
again, and a row whose JSON holds anything else (an extra key, say) is
reported as not canonical.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from schemas.events import decode_event, encode_event

GENESIS_HASH = bytes(32)
"""The ``prev_hash`` of every match's version 1."""

DOMAIN = b"matcha-event-chain-v1"


def format_recorded_at(recorded_at: datetime) -> str:
    """The instant as hashed: UTC, microseconds, ``Z``."""
    if recorded_at.tzinfo is None:
        raise ValueError("recorded_at must be timezone-aware")
    return recorded_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def field(raw: bytes) -> bytes:
    """One length-prefixed field of a hashed or signed message (docs/evidence-spec.md):
    its length as 4 bytes big-endian, then the bytes, so no two lists of fields give
    the same bytes."""
    return len(raw).to_bytes(4, "big") + raw


def canonical_bytes(
    *, match_id: str, version: int, actor: str, recorded_at: datetime, event_bytes: bytes
) -> bytes:
    return b"".join(
        (
            DOMAIN,
            field(match_id.encode()),
            field(str(version).encode()),
            field(actor.encode()),
            field(format_recorded_at(recorded_at).encode()),
            field(event_bytes),
        )
    )


def row_hash(
    prev_hash: bytes,
    *,
    match_id: str,
    version: int,
    actor: str,
    recorded_at: datetime,
    event_bytes: bytes,
) -> bytes:
    canonical = canonical_bytes(
        match_id=match_id,
        version=version,
        actor=actor,
        recorded_at=recorded_at,
        event_bytes=event_bytes,
    )
    return hashlib.sha256(prev_hash + canonical).digest()


Problem = Literal[
    "version_gap",
    "version_duplicated",
    "prev_hash_mismatch",
    "undecodable_data",
    "not_canonical",
    "type_mismatch",
    "hash_mismatch",
]


class ChainBreak(msgspec.Struct, frozen=True, kw_only=True):
    """The first place where a match's stored events stop being a valid chain."""

    match_id: str
    version: int
    """The first bad version (for a gap: the missing one)."""
    problem: Problem
    detail: str
    """A plain sentence for the audit report."""


def _get(row: Any, name: str) -> Any:
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def _data_bytes(data: Any) -> bytes:
    """``data`` as read from SQL: ``data::text`` (str), bytes, or psycopg's parsed JSON."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    return msgspec.json.encode(data)


def tag_of(event: Any) -> str:
    """A tagged Struct's tag (an event's ``type`` in JSON and in a stream's ``type``
    column)."""
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag


class _Codec(msgspec.Struct, frozen=True):
    """How one stream's rows are checked (``verify_chain``'s keyword arguments)."""

    id_column: str
    chain_id: Callable[[str], str]
    decode: Callable[[bytes], Any]
    encode: Callable[[Any], bytes]
    type_of: Callable[[Any], str]


def _check_row(row: Any, expected_prev: bytes, codec: _Codec) -> ChainBreak | None:
    match_id: str = _get(row, codec.id_column)
    version: int = _get(row, "version")

    def broken(problem: Problem, detail: str) -> ChainBreak:
        return ChainBreak(match_id=match_id, version=version, problem=problem, detail=detail)

    prev_hash = bytes(_get(row, "prev_hash"))
    if prev_hash != expected_prev:
        return broken(
            "prev_hash_mismatch",
            f"version {version} does not link to the hash of version {version - 1}",
        )
    raw = _data_bytes(_get(row, "data"))
    try:
        event = codec.decode(raw)
    except msgspec.DecodeError as exc:
        return broken("undecodable_data", f"version {version} is not a valid event: {exc}")
    event_bytes = codec.encode(event)
    if msgspec.json.decode(event_bytes) != msgspec.json.decode(raw):
        return broken("not_canonical", f"version {version} holds data that is not its event")
    tag = codec.type_of(event)
    if _get(row, "type") != tag:
        return broken(
            "type_mismatch",
            f"version {version} has type {_get(row, 'type')!r} but holds a {tag!r} event",
        )
    expected = row_hash(
        prev_hash,
        match_id=codec.chain_id(match_id),
        version=version,
        actor=_get(row, "actor"),
        recorded_at=_get(row, "recorded_at"),
        event_bytes=event_bytes,
    )
    if bytes(_get(row, "hash")) != expected:
        return broken(
            "hash_mismatch",
            f"version {version} was changed after it was written: its hash does not match",
        )
    return None


def verify_chain(
    rows: Iterable[Any],
    *,
    id_column: str = "match_id",
    chain_id: Callable[[str], str] = str,
    decode: Callable[[bytes], Any] = decode_event,
    encode: Callable[[Any], bytes] = encode_event,
    type_of: Callable[[Any], str] = tag_of,
) -> ChainBreak | None:
    """Check one stream's rows (mappings or objects with the column names), any order.

    Needs the columns ``id_column`` (a match's ``match_id`` by default), version,
    type, data, actor, recorded_at, prev_hash and hash. Returns the first break
    by version, or None. The keyword arguments make it check another stream of
    the same shape (``service.store.stream.Stream.verify``): its id column, the
    id its chain hashes, its codec.
    """
    codec = _Codec(id_column, chain_id, decode, encode, type_of)
    ordered = sorted(rows, key=lambda row: _get(row, "version"))
    expected_prev = GENESIS_HASH
    expected_version = 1
    for row in ordered:
        version = _get(row, "version")
        match_id = _get(row, id_column)
        if version < expected_version:
            return ChainBreak(
                match_id=match_id,
                version=version,
                problem="version_duplicated",
                detail=f"version {version} appears more than once",
            )
        if version > expected_version:
            return ChainBreak(
                match_id=match_id,
                version=expected_version,
                problem="version_gap",
                detail=f"version {expected_version} is missing (the next is {version})",
            )
        found = _check_row(row, expected_prev, codec)
        if found is not None:
            return found
        expected_prev = bytes(_get(row, "hash"))
        expected_version += 1
    return None


CHAIN_ROWS_SQL = """
SELECT position, match_id, version, type, data::text AS data, actor, recorded_at,
       prev_hash, hash
FROM events WHERE match_id = %s ORDER BY version, position
"""


async def check_match_chain(
    pool_or_conn: AsyncConnectionPool | AsyncConnection[Any], match_id: str
) -> ChainBreak | None:
    """Read a match's rows straight from the table and verify its chain."""
    if isinstance(pool_or_conn, AsyncConnectionPool):
        async with pool_or_conn.connection() as conn:
            return await check_match_chain(conn, match_id)
    async with pool_or_conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(CHAIN_ROWS_SQL, (match_id,))
        rows = await cur.fetchall()
    return verify_chain(rows)
