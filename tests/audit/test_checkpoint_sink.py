"""The checkpoint log's copy in an object store (S3, emulated by moto): each
checkpoint one object, never overwritten, and a second copy of the same one is
told it exists (two processes signing the same position race harmlessly)."""

from __future__ import annotations

import msgspec
import pytest

from service.evidence.checkpoints import (
    CheckpointLogEntry,
    Leaf,
    checkpoint_problem,
    sign_checkpoint,
)
from service.evidence.keys import Keyring, SigningKey
from service.evidence.sink import ObjectStoreSink

boto3 = pytest.importorskip("boto3")
moto = pytest.importorskip("moto")


def _entry(signer: SigningKey, sequence: int, version: int) -> CheckpointLogEntry:
    leaves = {"m1": Leaf("m1", version, "ab" * 32)}
    checkpoint = sign_checkpoint(
        signer, origin="db-1", sequence=sequence, leaves=leaves, position=10 * sequence
    )
    return CheckpointLogEntry(checkpoint=checkpoint, changed=list(leaves.values()))


def test_each_checkpoint_is_one_object_that_is_never_overwritten() -> None:
    signer = SigningKey.generate()
    with moto.mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="matcha-checkpoints")
        sink = ObjectStoreSink(s3, "matcha-checkpoints", "prod/")
        first, second = _entry(signer, 1, 3), _entry(signer, 2, 7)
        assert sink.put_now(first) is True
        assert sink.put_now(second) is True
        assert sink.put_now(first) is False, "a second copy of one checkpoint is told it exists"

        keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="matcha-checkpoints")["Contents"])
        assert keys == [sink.key(first), sink.key(second)]
        assert keys[0].startswith("prod/0000000000000010-")
        body = s3.get_object(Bucket="matcha-checkpoints", Key=sink.key(first))["Body"].read()
        stored = msgspec.json.decode(body, type=CheckpointLogEntry)
        assert stored == first, "the object holds the checkpoint as signed"
        keyring = Keyring.from_json(Keyring([signer.public()]).to_json())
        assert checkpoint_problem(stored.checkpoint, keyring) is None
