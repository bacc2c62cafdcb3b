"""A Merkle tree hashed as RFC 6962 / RFC 9162 §2.1 does, with inclusion proofs.

``MTH({}) = SHA-256()``; a leaf is ``SHA-256(0x00 || d)``; a node is
``SHA-256(0x01 || left || right)``, splitting ``n`` leaves at the largest
power of two below ``n``. Inclusion proofs are RFC 9162's audit paths and
``verify_inclusion`` is its verification algorithm (§2.1.3.2), so any
Certificate Transparency library can check them too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def root(leaves: Sequence[bytes]) -> bytes:
    """The tree head of these leaf hashes (already ``leaf_hash``-ed), bottom-up."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = list(leaves)
    # Pairing neighbours level by level, carrying an odd last node up, gives
    # exactly RFC 6962's split at the largest power of two (left subtrees full).
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """RFC 9162 PATH(index, leaves): the sibling hashes from the leaf up."""
    if not 0 <= index < len(leaves):
        raise IndexError("leaf index out of range")
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_proof(leaves[:k], index), root(leaves[k:])]
    return [*inclusion_proof(leaves[k:], index - k), root(leaves[:k])]


def verify_inclusion(
    leaf: bytes, index: int, tree_size: int, proof: Sequence[bytes], expected_root: bytes
) -> bool:
    """RFC 9162 §2.1.3.2: does ``leaf`` (a leaf hash) sit at ``index`` of that tree?"""
    if index >= tree_size or index < 0:
        return False
    fn, sn = index, tree_size - 1
    r = leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == expected_root
