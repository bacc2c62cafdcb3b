"""Chain check: every row's hash recomputed from the raw row.

The first break comes from the store's own ``verify_chain`` (one definition
of the chain, docs/event-store.md); the per-row ``hash_ok`` flags shown in
the log listing are recomputed here with the same ``row_hash``.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from schemas.events import decode_event, encode_event
from service.audit.report import ChainCheck, Finding
from service.audit.rows import RawRow
from service.store.chain import GENESIS_HASH, row_hash, verify_chain


def row_hash_ok(row: RawRow, previous: RawRow | None) -> bool:
    """This row links to its predecessor and its stored hash is its own."""
    expected_prev = previous.hash if previous is not None else GENESIS_HASH
    if row.prev_hash != expected_prev:
        return False
    raw = msgspec.json.encode(row.data)
    try:
        event_bytes = encode_event(decode_event(raw))
    except msgspec.DecodeError:
        return False
    if msgspec.json.decode(event_bytes) != row.data:
        return False
    recomputed = row_hash(
        row.prev_hash,
        match_id=row.match_id,
        version=row.version,
        actor=row.actor or "",
        recorded_at=row.recorded_at,
        event_bytes=event_bytes,
    )
    return recomputed == row.hash


def hash_flags(rows: Sequence[RawRow], chain_intact: bool = False) -> list[bool]:
    """Per row: its hash is its own. An intact chain already proves it of every row."""
    if chain_intact:
        return [True] * len(rows)
    return [row_hash_ok(row, rows[i - 1] if i else None) for i, row in enumerate(rows)]


def chain_check(rows: Sequence[RawRow]) -> ChainCheck:
    found = verify_chain(rows)
    if found is None:
        return ChainCheck(status="consistent", rows=len(rows))
    event_type = next((r.type for r in rows if r.version == found.version), None)
    return ChainCheck(
        status="inconsistent",
        rows=len(rows),
        first_break=Finding(
            version=found.version,
            event_type=event_type,
            problem=f"{found.problem}: {found.detail}",
        ),
    )
