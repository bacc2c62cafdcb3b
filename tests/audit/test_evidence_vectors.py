"""The test vectors of docs/evidence-spec.md against the Python implementation.

The vectors are made by ``service.vectors``; these tests say that the
committed files are what the code makes today (so the spec's field order
cannot drift from schemas/), that the formulas of the spec give the vectors'
hashes without the service's helpers, and that ``matcha verify`` passes the
good record and refuses every forged one, and a flipped byte.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import service.evidence.fields as fields
from schemas.events import HandEnded, decode_event, encode_event
from service import vectors
from service.evidence.keys import Keyring
from service.verify import verify_record

VECTORS = vectors.VECTORS


def _load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def _keyring() -> Keyring:
    return Keyring.from_json((VECTORS / "keys.json").read_bytes())


def _field(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "big") + raw


def test_the_committed_vectors_are_what_the_implementation_makes_today() -> None:
    stale = [
        str(path.relative_to(vectors.ROOT))
        for path, data in vectors.build().items()
        if not path.exists() or path.read_bytes() != data
    ]
    assert not stale, f"run `python -m service.vectors`: stale {stale}"


def test_a_field_added_to_an_event_makes_the_spec_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an event type that grew a field the spec does not list
    class HandEnded(msgspec.Struct, frozen=True, kw_only=True, tag="hand_ended", tag_field="type"):
        hand: int
        reason: str
        v: int = 1

    monkeypatch.setattr(
        fields,
        "EVENT_TYPES",
        tuple(HandEnded if t.__name__ == "HandEnded" else t for t in fields.EVENT_TYPES),
    )
    # When the spec's section is made again, then it differs from the committed page
    spec = vectors.SPEC.read_text()
    assert fields.markdown(fields.field_table()) not in spec
    assert "| 2 | `reason` | string | always |" in fields.markdown(fields.field_table())


def test_every_event_vector_hashes_as_the_spec_says_without_the_services_helpers() -> None:
    for vector in _load("events.json"):
        row = vector["row"]
        data = vector["event_bytes"].encode()
        # The bytes are the event's own canonical bytes (a decode and encode keeps them)...
        assert encode_event(decode_event(data)) == data, vector["name"]
        # ... and canonical and hash follow from §2's formula alone.
        canonical = b"matcha-event-chain-v1" + b"".join(
            _field(x)
            for x in (
                row["match_id"].encode(),
                str(row["version"]).encode(),
                row["actor"].encode(),
                row["recorded_at"].encode(),
                data,
            )
        )
        assert canonical.hex() == vector["canonical_bytes"], vector["name"]
        digest = hashlib.sha256(bytes.fromhex(row["prev_hash"]) + canonical).hexdigest()
        assert digest == vector["hash"], vector["name"]


def test_the_event_vectors_cover_every_event_type() -> None:
    names = {json.loads(v["event_bytes"])["type"] for v in _load("events.json")}
    assert names == {str(t.__struct_config__.tag) for t in fields.EVENT_TYPES}


def test_v_is_the_last_key_of_an_event_as_the_field_table_says() -> None:
    assert encode_event(HandEnded(hand=2)) == b'{"type":"hand_ended","hand":2,"v":1}'
    table = {s.name: s for s in fields.field_table()}
    assert [f.name for f in table["HandEnded"].fields] == ["hand", "v"]


def test_the_good_record_passes_matcha_verify_with_the_vector_keys() -> None:
    ok, problems = verify_record((VECTORS / "record-good.json").read_bytes(), [], _keyring())
    assert problems == []
    assert any(line.startswith("receipt: version 43") for line in ok)


@pytest.mark.parametrize("entry", _load("forged.json"), ids=lambda e: e["file"])
def test_matcha_verify_refuses_every_forged_record(entry: dict[str, Any]) -> None:
    _, problems = verify_record((VECTORS / entry["file"]).read_bytes(), [], _keyring())
    assert problems == entry["python"]


def test_a_flipped_hex_digit_of_any_event_hash_is_refused() -> None:
    data = (VECTORS / "record-good.json").read_text()
    record = json.loads(data)
    for i in range(len(record["events"])):
        forged = json.loads(data)
        h = forged["events"][i]["hash"]
        forged["events"][i]["hash"] = ("1" if h[0] == "0" else "0") + h[1:]
        _, problems = verify_record(json.dumps(forged).encode(), [], _keyring())
        assert problems, f"event {i + 1}"


def test_a_flipped_byte_inside_an_event_is_refused() -> None:
    # Given the good record's bytes with one card of one play changed
    data = (VECTORS / "record-good.json").read_bytes()
    at = data.index(b'"card": "') + len(b'"card": "') + 1
    digit = data[at : at + 1]
    forged = data[:at] + (b"1" if digit != b"1" else b"2") + data[at + 1 :]
    # When verified, then the chain names the event
    _, problems = verify_record(forged, [], _keyring())
    assert any("hash does not match its content" in p for p in problems)


def test_the_vector_receipt_signs_the_message_the_spec_spells() -> None:
    vector = _load("receipt.json")
    receipt = vector["receipt"]
    salt = hashlib.sha256(b"matcha-head-salt-v1" + bytes.fromhex(vector["seed"])).digest()
    blind = hashlib.sha256(
        b"matcha-head-blind-v1" + salt + bytes.fromhex(vector["chain_hash"])
    ).digest()
    assert blind.hex() == receipt["blinded_hash"]
    message = b"matcha-signed-head-v1" + b"".join(
        _field(x)
        for x in (
            receipt["key_id"].encode(),
            receipt["match_id"].encode(),
            str(receipt["version"]).encode(),
            blind,
            receipt["server_time"].encode(),
        )
    )
    assert message.hex() == vector["message"]
    assert _keyring().verify(receipt["key_id"], message, base64.b64decode(receipt["signature"]))


def test_the_checkpoint_vector_proves_the_match_in_the_tree() -> None:
    vector = _load("checkpoint.json")
    proof = vector["proof"]
    leaf = proof["leaf"]
    data = _field(leaf[0].encode()) + _field(str(leaf[1]).encode()) + _field(bytes.fromhex(leaf[2]))
    assert data.hex() in {x["leaf_data"] for x in vector["leaves"]}
    node = hashlib.sha256(b"\x00" + data).digest()
    fn, sn = proof["leaf_index"], proof["checkpoint"]["tree_size"] - 1
    for p in map(bytes.fromhex, proof["path"]):
        if fn & 1 or fn == sn:
            node = hashlib.sha256(b"\x01" + p + node).digest()
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        else:
            node = hashlib.sha256(b"\x01" + node + p).digest()
        fn, sn = fn >> 1, sn >> 1
    assert node.hex() == proof["checkpoint"]["root"]


def test_the_vectors_name_the_reason_each_forgery_must_be_refused_for() -> None:
    reasons = {e["reason"] for e in _load("forged.json")}
    assert reasons == {
        "hash_mismatch",
        "receipt_mismatch",
        "events_removed",
        "version_gap",
        "bad_signature",
        "unknown_key",
        "deal_mismatch",
        "seed_commitment",
        "not_included",
    }
    assert all(Path(VECTORS / e["file"]).exists() for e in _load("forged.json"))
