"""Consistency proofs between checkpoints (RFC 9162 §2.1.4): a later checkpoint's
history tree (every leaf the checkpoint log ever appended, in order) extends an
earlier one's. Proofs hold on grown logs, fail on cut or rewritten ones; the
service serves them at ``GET /api/checkpoints/consistency`` and ``matcha verify
--checkpoints`` checks them against the checkpoint last seen."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from audit_forgery import append_batches
from audit_matches import play
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import AsyncConnection
from test_receipts import Service, service  # noqa: F401 - the fixture, shared

from service.evidence import merkle
from service.evidence.checkpoints import (
    CHECKPOINT_FORMAT_V2,
    CheckpointLog,
    CheckpointLogEntry,
    ConsistencyProof,
    checkpoint_log_for,
    checkpoint_problem,
    consistency_problem,
    history_leaf,
    sign_checkpoint,
    write_checkpoint,
)
from service.evidence.keys import Keyring
from service.store.events import EventStore
from service.verify import verify

VECTORS = Path(__file__).resolve().parents[2] / "docs" / "evidence-vectors"


def _leaves(n: int, tag: bytes = b"") -> list[bytes]:
    return [merkle.leaf_hash(tag + i.to_bytes(4, "big")) for i in range(n)]


def _history(leaves: list[bytes]) -> merkle.History:
    history = merkle.History()
    for leaf in leaves:
        history.append(leaf)
    return history


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_a_grown_history_is_consistent_with_every_prefix(sizes: tuple[int, int]) -> None:
    n, m = sizes
    leaves = _leaves(n)
    history = _history(leaves)
    # Given the heads of the first m and of all n leaves, as two checkpoints sign them
    assert history.root(m) == merkle.root(leaves[:m])
    assert history.root() == merkle.root(leaves)
    proof = history.consistency_proof(m, n)
    # Then the proof shows the later extends the earlier, and only that pair
    assert merkle.verify_consistency(m, n, merkle.root(leaves[:m]), merkle.root(leaves), proof)
    if 0 < m < n:
        other = [*leaves[: m - 1], merkle.leaf_hash(b"x")]
        assert not merkle.verify_consistency(m, n, merkle.root(other), history.root(), proof)
        grown = [*leaves, merkle.leaf_hash(b"y")]
        assert not merkle.verify_consistency(m, n, history.root(m), merkle.root(grown), proof)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 120).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 1))))
def test_a_history_cut_before_an_earlier_checkpoint_has_no_proof_that_verifies(
    sizes: tuple[int, int],
) -> None:
    n, m = sizes
    leaves = _leaves(n)
    earlier = merkle.root(leaves[:m])
    # Given a log that lost one leaf the earlier checkpoint covered, then grew again
    cut_at = random.Random(n * 1000 + m).randrange(m)
    rewritten = _history([*leaves[:cut_at], *leaves[cut_at + 1 :], merkle.leaf_hash(b"new")])
    # Then neither the proof it can make from the earlier size nor an honest one holds
    for size in (m, m - 1):
        if 0 < size <= len(rewritten):
            proof = rewritten.consistency_proof(size, len(rewritten))
            head = rewritten.root()
            assert not merkle.verify_consistency(m, len(rewritten), earlier, head, proof)


def test_the_consistency_vectors_hold_and_the_cut_one_does_not() -> None:
    vectors = json.loads((VECTORS / "checkpoint-consistency.json").read_text())
    keyring = Keyring.from_json((VECTORS / "keys.json").read_bytes())
    decode = msgspec.json.Decoder(ConsistencyProof).decode
    history = _history([bytes.fromhex(x["leaf_hash"]) for x in vectors["history"]])
    for held in vectors["holds"]:
        proof = decode(json.dumps(held))
        assert consistency_problem(proof, keyring) is None
        assert proof.second.history_root == history.root(proof.second.history_size).hex()
    cut = decode(json.dumps(vectors["cut"]["proof"]))
    assert "does not extend" in (consistency_problem(cut, keyring) or "")


@pytest.mark.anyio
async def test_checkpoints_of_a_growing_store_extend_each_other_and_a_cut_log_does_not(
    signed_store: EventStore, database_url: str, keys: Any
) -> None:
    # Given three checkpoints written as matches move on, in PostgreSQL
    async with await AsyncConnection.connect(database_url, autocommit=True) as conn:
        log = await checkpoint_log_for(conn, keys.checkpoint_folder)
        for n in range(3):
            seed, batches = play(random.Random(n), match_id=f"c-{n}", stop_after=3 + n)
            await append_batches(signed_store, f"c-{n}", seed, batches)
            entry = await write_checkpoint(conn, log, keys.signer, keys.keyring)
            assert entry is not None and entry.checkpoint.format == CHECKPOINT_FORMAT_V2
    reader = CheckpointLog(log.path, log.origin)
    reader.refresh()
    assert len(reader.history) == 3
    # Then every later checkpoint extends every earlier one
    for a in (1, 2, 3):
        for b in range(a, 4):
            proof = reader.consistency(a, b)
            assert proof is not None and consistency_problem(proof, keys.keyring) is None
    kept = reader.signed[1]  # what a player saw after the first checkpoint
    # When the log is rewritten after checkpoint 1: its leaf dropped, the rest re-signed
    lines = [msgspec.json.decode(line, type=CheckpointLogEntry) for line in log.path.open("rb")]
    rest = [leaf for entry in lines[1:] for leaf in entry.changed]
    history = _history([history_leaf(leaf) for leaf in rest])
    forged = sign_checkpoint(
        keys.signer,
        origin=log.origin,
        sequence=3,
        leaves={leaf.match_id: leaf for leaf in rest},
        position=lines[-1].checkpoint.position,
        history=history,
    )
    log.path.write_bytes(
        msgspec.json.encode(CheckpointLogEntry(checkpoint=forged, changed=rest)) + b"\n"
    )
    cut = CheckpointLog(log.path, log.origin)
    cut.refresh()
    assert checkpoint_problem(forged, keys.keyring) is None  # the service's own signature
    # Then the proof the cut log can give from the kept checkpoint does not verify
    size = kept.history_size
    assert isinstance(size, int)
    path = cut.history.consistency_proof(min(size, len(cut.history)), len(cut.history))
    lie = ConsistencyProof(first=kept, second=forged, path=[p.hex() for p in path])
    assert "does not extend" in (consistency_problem(lie, keys.keyring) or "")


@pytest.mark.anyio
async def test_the_service_serves_consistency_proofs_that_matcha_verify_checks(
    service: Service,  # noqa: F811 - the fixture
    signed_store: EventStore,
    checkpoint: Any,
    keys: Any,
    tmp_path: Path,
) -> None:
    # Given two checkpoints of a store that grew between them
    for n in range(2):
        seed, batches = play(random.Random(20 + n), match_id=f"s-{n}", stop_after=3)
        await append_batches(signed_store, f"s-{n}", seed, batches)
        assert await checkpoint() is not None
    async with service() as client:
        answer = await client.get("/api/checkpoints/consistency", params={"first": 1})
        missing = await client.get("/api/checkpoints/consistency", params={"first": 99})
        backwards = await client.get(
            "/api/checkpoints/consistency", params={"first": 2, "second": 1}
        )
        keyring = (await client.get("/api/keys")).content
    assert answer.status_code == 200, answer.text
    assert (missing.status_code, missing.json()["code"]) == (404, "no_consistency_proof")
    assert backwards.status_code == 404
    proof = answer.json()
    assert (proof["first"]["sequence"], proof["second"]["sequence"]) == (1, 2)
    # When matcha verify checks it against the checkpoint last seen
    (tmp_path / "keys.json").write_bytes(keyring)
    (tmp_path / "proof.json").write_text(json.dumps(proof))
    seen = tmp_path / "seen.json"
    seen.write_text(json.dumps(proof["first"]))
    runner = CliRunner()
    args = ["--checkpoints", str(tmp_path / "proof.json"), "--keys", str(tmp_path / "keys.json")]
    ok = runner.invoke(verify, [*args, "--seen", str(seen)])
    # Then it holds, and the later checkpoint is now the one last seen
    assert ok.exit_code == 0, ok.output
    assert "extends 1" in ok.output
    assert json.loads(seen.read_text())["sequence"] == 2
    # And a proof that does not start where the verifier last was is refused
    again = runner.invoke(verify, [*args, "--seen", str(seen)])
    assert again.exit_code == 1 and "not at the one you last saw" in again.output
    # And a proof with one hash changed is refused
    proof["path"] = ["00" * 32 for _ in proof["path"]] or ["00" * 32]
    (tmp_path / "proof.json").write_text(json.dumps(proof))
    bad = runner.invoke(verify, args)
    assert bad.exit_code == 1 and "does not extend" in bad.output
