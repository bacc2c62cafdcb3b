"""Signed checkpoints: RFC 6962 hashing and inclusion proofs, a log shared by
several processes, and only signed heads as leaves."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from audit_forgery import append_batches
from audit_matches import play
from psycopg import AsyncConnection

from service.evidence import merkle
from service.evidence.checkpoints import (
    CheckpointLog,
    checkpoint_log_for,
    checkpoint_problem,
    proof_problem,
    write_checkpoint,
)
from service.store.events import EventStore

pytestmark = pytest.mark.anyio


def reference_root(leaves: list[bytes]) -> bytes:
    """RFC 6962 §2.1, MTH, written from the RFC: split at the largest power of 2 < n."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << (len(leaves) - 1).bit_length() - 1
    return hashlib.sha256(
        b"\x01" + reference_root(leaves[:k]) + reference_root(leaves[k:])
    ).digest()


def test_the_tree_hashes_as_rfc_6962_and_every_proof_verifies_only_its_own_leaf() -> None:
    assert merkle.root([]) == hashlib.sha256(b"").digest()
    for n in range(1, 34):
        leaves = [merkle.leaf_hash(f"leaf {i}".encode()) for i in range(n)]
        head = merkle.root(leaves)
        assert head == reference_root(leaves), n
        for i in range(n):
            proof = merkle.inclusion_proof(leaves, i)
            assert len(proof) <= max(1, (n - 1).bit_length())
            assert merkle.verify_inclusion(leaves[i], i, n, proof, head)
            other = merkle.leaf_hash(b"not a leaf")
            assert not merkle.verify_inclusion(other, i, n, proof, head)
            if n > 1:
                assert not merkle.verify_inclusion(leaves[i], (i + 1) % n, n, proof, head)


async def test_two_processes_share_one_checkpoint_log_and_only_signed_heads_become_leaves(
    signed_store: EventStore, store: EventStore, database_url: str, keys: Any
) -> None:
    import random

    async with await AsyncConnection.connect(database_url, autocommit=True) as conn:
        one = await checkpoint_log_for(conn, keys.checkpoint_folder)
        two = CheckpointLog(one.path, one.origin)  # another process, the same file
        for n, log in enumerate((one, two, one)):
            seed, batches = play(random.Random(n), match_id=f"m-{n}", stop_after=4)
            await append_batches(signed_store, f"m-{n}", seed, batches)
            entry = await write_checkpoint(conn, log, keys.signer, keys.keyring)
            assert entry is not None and entry.checkpoint.sequence == n + 1
            assert [leaf.match_id for leaf in entry.changed] == [f"m-{n}"]
        # nothing moved: no new checkpoint
        assert await write_checkpoint(conn, two, keys.signer, keys.keyring) is None
        # a match appended without the key never becomes a leaf
        seed, batches = play(random.Random(9), match_id="m-unsigned", stop_after=2)
        await append_batches(store, "m-unsigned", seed, batches)
        entry = await write_checkpoint(conn, two, keys.signer, keys.keyring, force=True)
    assert entry is not None and entry.changed == []
    lines = one.path.read_text().splitlines()
    assert len(lines) == 4
    reader = CheckpointLog(one.path, one.origin)
    reader.refresh()
    assert sorted(reader.leaves) == ["m-0", "m-1", "m-2"]
    assert reader.latest == entry.checkpoint
    assert checkpoint_problem(reader.latest, keys.keyring) is None
    for match_id in ("m-0", "m-1", "m-2"):
        proof = reader.proof(match_id)
        assert proof is not None and proof_problem(proof, keys.keyring) is None
    assert reader.proof("m-unsigned") is None
    # a checkpoint with one field changed no longer verifies
    import msgspec

    forged = msgspec.structs.replace(reader.latest, tree_size=reader.latest.tree_size + 1)
    assert checkpoint_problem(forged, keys.keyring) is not None
