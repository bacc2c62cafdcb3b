"""Signed heads: the store signs the last row of every append; that signature
is also the receipt a player holds (docs/event-store.md "Signatures").

The signature covers the head's hash *blinded* with a per-match salt:

    salt    = SHA-256(b"matcha-head-salt-v1" || seed)        (seed: its 32 bytes;
                                                              none: empty; not hex:
                                                              its UTF-8 text)
    blinded = SHA-256(b"matcha-head-blind-v1" || salt || hash)
    message = b"matcha-signed-head-v1"
              + field(key_id) + field(match_id) + field(str(version))
              + field(blinded) + field(recorded_at)

with ``field(x) = len(x).to_bytes(4, "big") + x`` (``recorded_at`` exactly as
the chain hashes it). Why blinded: a receipt goes to a player while the
match is live, and a bare chain hash would let them test guesses of the
rows it covers (the opponent's face-down card is one of a dozen, its time a
few million microseconds: a brute force of seconds). The salt comes from the
secret seed, so nobody can test a guess before the match ends; once the seed
is revealed anyone recomputes ``blinded`` from the public record. Rows before
the signed one in the same append are covered through the hash chain.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from service.store.chain import field, format_recorded_at

HEAD_DOMAIN = b"matcha-signed-head-v1"
SALT_DOMAIN = b"matcha-head-salt-v1"
BLIND_DOMAIN = b"matcha-head-blind-v1"


def _seed_bytes(seed: str | None) -> bytes:
    if not seed:
        return b""
    try:
        return bytes.fromhex(seed)
    except ValueError:  # not a dealing seed (the store accepts any text): its UTF-8
        return seed.encode()


def head_salt(seed: str | None) -> bytes:
    """The match's salt, from its seed (hex); a match without a seed gets the empty one's."""
    return hashlib.sha256(SALT_DOMAIN + _seed_bytes(seed)).digest()


def blinded(salt: bytes, hash_: bytes) -> bytes:
    return hashlib.sha256(BLIND_DOMAIN + salt + bytes(hash_)).digest()


def head_message(
    *, key_id: str, match_id: str, version: int, blinded_hash: bytes, recorded_at: datetime | str
) -> bytes:
    at = recorded_at if isinstance(recorded_at, str) else format_recorded_at(recorded_at)
    return b"".join(
        (
            HEAD_DOMAIN,
            field(key_id.encode()),
            field(match_id.encode()),
            field(str(version).encode()),
            field(bytes(blinded_hash)),
            field(at.encode()),
        )
    )


def row_head_message(
    *,
    key_id: str | None,
    match_id: str,
    version: int,
    hash_: bytes,
    recorded_at: datetime | str,
    salt: bytes,
) -> bytes:
    """The message a row's signature must sign, from the row and its match's salt."""
    return head_message(
        key_id=key_id or "",
        match_id=match_id,
        version=version,
        blinded_hash=blinded(salt, hash_),
        recorded_at=recorded_at,
    )
