"""Signed heads: the store signs the last row of every append; that signature
is also the receipt a player holds (docs/audit.md "Event signatures").

The message signed for row ``(match_id, version)`` is

    b"matcha-signed-head-v1"
    + field(key_id) + field(match_id) + field(str(version))
    + field(hash) + field(recorded_at)

with ``field(x) = len(x).to_bytes(4, "big") + x`` (``hash`` the raw 32
bytes, the others UTF-8; ``recorded_at`` exactly as the chain hashes it,
``YYYY-MM-DDTHH:MM:SS.ffffffZ``). Rows before the signed one in the same
append are covered through the hash chain: the signed hash commits to them.
"""

from __future__ import annotations

from datetime import datetime

from service.store.chain import format_recorded_at

HEAD_DOMAIN = b"matcha-signed-head-v1"


def _field(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "big") + raw


def head_message(
    *, key_id: str, match_id: str, version: int, hash_: bytes, recorded_at: datetime | str
) -> bytes:
    at = recorded_at if isinstance(recorded_at, str) else format_recorded_at(recorded_at)
    return b"".join(
        (
            HEAD_DOMAIN,
            _field(key_id.encode()),
            _field(match_id.encode()),
            _field(str(version).encode()),
            _field(bytes(hash_)),
            _field(at.encode()),
        )
    )
