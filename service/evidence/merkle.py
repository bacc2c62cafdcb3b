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


class History:
    """An append-only list of leaf hashes, with RFC 9162 tree heads of any prefix
    and consistency proofs between two prefixes, each in O(log n) hashes.

    ``_levels[k][i]`` is the head of the complete subtree of leaves
    ``[i * 2**k, (i + 1) * 2**k)``: every subtree RFC 9162's recursion asks for
    is either one of those or splits into them, so nothing is hashed twice.
    """

    def __init__(self) -> None:
        self._levels: list[list[bytes]] = [[]]

    def __len__(self) -> int:
        return len(self._levels[0])

    def append(self, leaf: bytes) -> None:
        self._levels[0].append(leaf)
        k = 0
        while len(self._levels[k]) % 2 == 0:
            if len(self._levels) == k + 1:
                self._levels.append([])
            pair = self._levels[k][-2:]
            self._levels[k + 1].append(node_hash(pair[0], pair[1]))
            k += 1

    def _subtree(self, lo: int, hi: int) -> bytes:
        n = hi - lo
        if n == 0:
            return hashlib.sha256(b"").digest()
        if n & (n - 1) == 0 and lo % n == 0:
            k = n.bit_length() - 1
            return self._levels[k][lo >> k]
        k = _split(n)
        return node_hash(self._subtree(lo, lo + k), self._subtree(lo + k, hi))

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` leaves (all of them by default)."""
        size = len(self) if size is None else size
        if not 0 <= size <= len(self):
            raise IndexError("tree size out of range")
        return self._subtree(0, size)

    def consistency_proof(self, first: int, second: int) -> list[bytes]:
        """RFC 9162 §2.1.4.1 PROOF(first, D[0:second])."""
        if not 0 <= first <= second <= len(self):
            raise IndexError("tree sizes out of range")
        if first in (0, second):
            return []
        return self._subproof(first, 0, second, True)

    def _subproof(self, m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if whole else [self._subtree(lo, hi)]
        k = _split(n)
        if m <= k:
            return [*self._subproof(m, lo, lo + k, whole), self._subtree(lo + k, hi)]
        return [*self._subproof(m - k, lo + k, hi, False), self._subtree(lo, lo + k)]


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 §2.1.4.2: is the tree of ``second`` leaves an extension of that of ``first``?"""
    if first < 0 or first > second:
        return False
    if first == second:
        return not proof and first_root == second_root
    if first == 0:
        return not proof  # the empty tree is a prefix of every tree
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:
        path = [first_root, *path]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_root and sr == second_root and sn == 0
