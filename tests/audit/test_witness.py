"""The witness (service/evidence/witness.py): it countersigns each checkpoint that
extends the one it witnessed last, and raises an alarm, writing nothing, when the
service shows it a rewritten log: a checkpoint that does not extend the last, one
that goes back, or another checkpoint under a sequence already witnessed."""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from audit_forgery import append_batches
from audit_matches import play
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from psycopg import AsyncConnection

from service.evidence import merkle
from service.evidence.checkpoints import (
    CheckpointLog,
    CheckpointLogEntry,
    ConsistencyProof,
    checkpoint_log_for,
    history_leaf,
    sign_checkpoint,
    write_checkpoint,
)
from service.evidence.keys import Keyring, SigningKey
from service.evidence.witness import (
    Alarm,
    append,
    last_witnessed,
    step,
    witness_message,
)
from service.store.events import EventStore

pytestmark = pytest.mark.anyio


async def _three_checkpoints(signed_store: EventStore, database_url: str, keys: Any) -> Any:
    async with await AsyncConnection.connect(database_url, autocommit=True) as conn:
        log = await checkpoint_log_for(conn, keys.checkpoint_folder)
        for n in range(3):
            seed, batches = play(random.Random(40 + n), match_id=f"w-{n}", stop_after=3)
            await append_batches(signed_store, f"w-{n}", seed, batches)
            assert await write_checkpoint(conn, log, keys.signer, keys.keyring) is not None
    log.refresh()
    return log


def _rewrite_after_first(log: CheckpointLog, keys: Any, sequence: int) -> CheckpointLog:
    """The service cuts the first checkpoint's leaf out of its file and signs a
    checkpoint ``sequence`` over what is left (with its own, valid key)."""
    lines = [msgspec.json.decode(line, type=CheckpointLogEntry) for line in log.path.open("rb")]
    rest = [leaf for entry in lines[1:] for leaf in entry.changed]
    history = merkle.History()
    for leaf in rest:
        history.append(history_leaf(leaf))
    forged = sign_checkpoint(
        keys.signer,
        origin=log.origin,
        sequence=sequence,
        leaves={leaf.match_id: leaf for leaf in rest},
        position=lines[-1].checkpoint.position + 1,
        history=history,
    )
    log.path.write_bytes(
        msgspec.json.encode(CheckpointLogEntry(checkpoint=forged, changed=rest)) + b"\n"
    )
    cut = CheckpointLog(log.path, log.origin)
    cut.refresh()
    return cut


def _proofs_of(log: CheckpointLog) -> Any:
    def fetch(first: int, second: int) -> Any:
        proof = log.consistency(first, second)
        if proof is None:
            raise Alarm(f"no consistency proof from {first} to {second}")
        return proof

    return fetch


async def test_the_witness_countersigns_checkpoints_that_extend_each_other(
    signed_store: EventStore, database_url: str, keys: Any, tmp_path: Path
) -> None:
    # Given a store checkpointed three times and a witness with a key of its own
    log = await _three_checkpoints(signed_store, database_url, keys)
    witness = SigningKey(Ed25519PrivateKey.generate())
    out = tmp_path / "witness.jsonl"
    # When it witnesses checkpoint 1 (first sight), then 3, then 3 again
    for sequence in (1, 3, 3):
        line = step(
            log.signed[sequence], last_witnessed(out), _proofs_of(log), keys.keyring, witness
        )
        if line is not None:
            append(out, line)
    # Then its file holds 1 and 3, each countersigned with the witness's key
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    ring = Keyring([witness.public()])
    for raw, sequence in zip(lines, (1, 3), strict=True):
        seen = msgspec.json.decode(raw)
        assert seen["checkpoint"]["sequence"] == sequence
        checkpoint = log.signed[sequence]
        message = witness_message(checkpoint, seen["witnessed_at"], witness.key_id)
        assert ring.verify(witness.key_id, message, base64.b64decode(seen["witness_signature"]))


async def test_the_witness_raises_the_alarm_on_a_log_rewritten_between_two_checkpoints(
    signed_store: EventStore, database_url: str, keys: Any, tmp_path: Path
) -> None:
    # Given a witness that saw checkpoint 2
    log = await _three_checkpoints(signed_store, database_url, keys)
    witness = SigningKey(Ed25519PrivateKey.generate())
    out = tmp_path / "witness.jsonl"
    first = step(log.signed[2], None, _proofs_of(log), keys.keyring, witness)
    assert first is not None
    append(out, first)
    before = out.read_bytes()
    # When the service rewrites its log and signs a checkpoint 4 over the cut history
    cut = _rewrite_after_first(log, keys, sequence=4)
    forged = cut.latest
    assert forged is not None

    # Then the witness refuses it, whatever proof the service offers, and writes nothing
    def lying_proof(first: int, second: int) -> Any:
        size = min(log.signed[first].history_size or 0, len(cut.history))
        path = cut.history.consistency_proof(size, len(cut.history))
        return ConsistencyProof(
            first=log.signed[first], second=forged, path=[p.hex() for p in path]
        )

    with pytest.raises(Alarm, match="does not extend"):
        step(forged, last_witnessed(out), lying_proof, keys.keyring, witness)
    assert out.read_bytes() == before


async def test_the_witness_refuses_a_second_checkpoint_of_one_sequence_and_a_step_back(
    signed_store: EventStore, database_url: str, keys: Any
) -> None:
    log = await _three_checkpoints(signed_store, database_url, keys)
    witness = SigningKey(Ed25519PrivateKey.generate())
    seen = log.signed[3]
    # A checkpoint 3 signed again over a rewritten history
    cut = _rewrite_after_first(log, keys, sequence=3)
    assert cut.latest is not None
    with pytest.raises(Alarm, match="two different checkpoints 3"):
        step(cut.latest, seen, _proofs_of(cut), keys.keyring, witness)
    # An older checkpoint shown after a newer one
    with pytest.raises(Alarm, match="went back"):
        step(log.signed[1], seen, _proofs_of(log), keys.keyring, witness)
    # A checkpoint whose signature does not verify
    forged = msgspec.structs.replace(seen, sequence=seen.sequence + 1)
    with pytest.raises(Alarm, match="does not verify"):
        step(forged, seen, _proofs_of(log), keys.keyring, witness)
