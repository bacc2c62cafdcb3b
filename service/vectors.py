"""``python -m service.vectors [--check]``: the test vectors of
docs/evidence-spec.md, made by the Python implementation itself.

Writes ``docs/evidence-vectors/`` (single events with their bytes and hashes,
the seed commitment, a deal, a receipt, a checkpoint with an inclusion proof, a
whole small match's record and forged copies of it, each with the reason a
verifier must give), the spec's generated section "Field order" and the
browser verifier's table (``service/web/static/evidence_fields.js``). Everything
is deterministic: a fixed seed, fixed instants and a fixed **test** signing key
(its private bytes are published here: it signs nothing but these vectors).
Before writing, every good vector is checked to pass ``matcha verify`` and every
forged one to fail it, so the files never say what the implementation does not.
``--check`` writes nothing and exits 1 when a committed file differs (the suite
runs the same comparison: tests/audit/test_evidence_vectors.py).

A console module (the cli part): it builds records with ``service.replays``,
which the evidence package may not import.
"""

from __future__ import annotations

import base64
import hashlib
import random
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from schemas.commands import StartMatch
from schemas.events import (
    CardPlayed,
    DisputeDecided,
    DisputeFiled,
    Event,
    HandDealt,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
    Passed,
    encode_event,
)
from schemas.receipts import Receipt
from schemas.rules import DUEL, MatchTerms, RealTime
from service.bots import random_bot
from service.engine import dealing
from service.engine.decide import run
from service.engine.state import Table
from service.engine.turns import must_keep
from service.evidence import merkle
from service.evidence.checkpoints import (
    Checkpoint,
    ConsistencyProof,
    InclusionProof,
    Leaf,
    checkpoint_message,
    consistency_problem,
    history_leaf,
    leaf_data,
    sign_checkpoint,
    tree_leaves,
)
from service.evidence.fields import field_table, markdown, table_json
from service.evidence.keys import Keyring, SigningKey
from service.replays.record import MatchRecord, RecordedEvent, encode_record, record_of_events
from service.store.chain import GENESIS_HASH, canonical_bytes, format_recorded_at, row_hash
from service.store.heads import blinded, head_message, head_salt
from service.verify import verify_record

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT / "docs" / "evidence-vectors"
SPEC = ROOT / "docs" / "evidence-spec.md"
JS_FIELDS = ROOT / "service" / "web" / "static" / "evidence_fields.js"
BEGIN, END = "<!-- field-order:begin -->", "<!-- field-order:end -->"

TEST_KEY_BYTES = hashlib.sha256(b"matcha test vectors: never a service key").digest()
"""The private bytes of the vectors' signing key (RFC 8032 seed): public on purpose."""
MATCH_ID = "vector-match-1"
START = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
STEP = timedelta(seconds=1, microseconds=250_001)
ORIGIN = "matcha-vectors"


def test_key() -> SigningKey:
    return SigningKey(
        Ed25519PrivateKey.from_private_bytes(TEST_KEY_BYTES), "2026-01-01T00:00:00.000000Z"
    )


def _chained(match_id: str, events: list[tuple[Event, str]]) -> list[RecordedEvent]:
    """Events hashed into a chain, one every ``STEP`` from ``START``."""
    out: list[RecordedEvent] = []
    prev = GENESIS_HASH
    for i, (event, actor) in enumerate(events):
        at = START + STEP * i
        hash_ = row_hash(
            prev,
            match_id=match_id,
            version=i + 1,
            actor=actor,
            recorded_at=at,
            event_bytes=encode_event(event),
        )
        out.append(
            RecordedEvent(
                version=i + 1,
                actor=actor,
                recorded_at=format_recorded_at(at),
                prev_hash=prev.hex(),
                hash=hash_.hex(),
                event=event,
            )
        )
        prev = hash_
    return out


def _receipt(signer: SigningKey, match_id: str, e: RecordedEvent, seed: str | None) -> Receipt:
    blind = blinded(head_salt(seed), bytes.fromhex(e.hash))
    message = head_message(
        key_id=signer.key_id,
        match_id=match_id,
        version=e.version,
        blinded_hash=blind,
        recorded_at=e.recorded_at,
    )
    return Receipt(
        match_id=match_id,
        version=e.version,
        blinded_hash=blind.hex(),
        server_time=e.recorded_at,
        key_id=signer.key_id,
        signature=base64.b64encode(signer.sign(message)).decode(),
    )


def _other_leaves() -> dict[str, Leaf]:
    """Four other matches' heads beside ours in the checkpoint (made-up hashes)."""
    return {
        f"vector-other-{c}": Leaf(
            f"vector-other-{c}", n, hashlib.sha256(f"other {c}".encode()).hexdigest()
        )
        for n, c in enumerate("abce", start=3)
    }


def _checkpoint(signer: SigningKey, leaves: dict[str, Leaf], match_id: str) -> InclusionProof:
    """The match in checkpoint 7, a ``matcha-checkpoint/2`` whose history holds the
    five leaves in tree order (as the first checkpoint of a log would)."""
    ids, hashes = tree_leaves(leaves)
    history = merkle.History()
    for h in hashes:
        history.append(h)
    checkpoint = sign_checkpoint(
        signer,
        origin=ORIGIN,
        sequence=7,
        leaves=leaves,
        position=1234,
        history=history,
        issued_at=format_recorded_at(START + timedelta(minutes=10)),
    )
    index = ids.index(match_id)
    return InclusionProof(
        checkpoint=checkpoint,
        leaf=leaves[match_id],
        leaf_index=index,
        path=[h.hex() for h in merkle.inclusion_proof(hashes, index)],
    )


def _history_leaves(n: int, salt: str) -> list[Leaf]:
    """``n`` made-up leaves as a checkpoint log appends them (matches moving on)."""
    return [
        Leaf(f"vector-{salt}-{i % 4}", i + 1, hashlib.sha256(f"{salt} {i}".encode()).hexdigest())
        for i in range(n)
    ]


def consistency_vectors(signer: SigningKey) -> dict[str, Any]:
    """A checkpoint log's history of 11 leaves with checkpoints at 4, 5 and 11 leaves,
    the proofs between them, and a log rewritten between two checkpoints: the proof
    its service can offer from the checkpoint a player kept does not verify."""
    leaves = _history_leaves(11, "history")
    history = merkle.History()
    signed: dict[int, Checkpoint] = {}
    at = {4: 1, 5: 2, 11: 3}
    for i, leaf in enumerate(leaves, start=1):
        history.append(history_leaf(leaf))
        if i in at:
            signed[i] = sign_checkpoint(
                signer,
                origin=ORIGIN,
                sequence=at[i],
                leaves={leaf.match_id: leaf for leaf in leaves[:i]},
                position=100 * i,
                history=history,
                issued_at=format_recorded_at(START + timedelta(hours=1, minutes=i)),
            )

    def proof(a: int, b: int, tree: merkle.History, second: Checkpoint) -> ConsistencyProof:
        path = tree.consistency_proof(a, b)
        return ConsistencyProof(first=signed[a], second=second, path=[h.hex() for h in path])

    # The rewrite: leaf 3 (inside checkpoint 1) dropped, the rest appended again, and
    # a checkpoint 3 signed over that history (the service's own key: it lies).
    rewritten = [*leaves[:2], *leaves[3:]]
    cut = merkle.History()
    for leaf in rewritten:
        cut.append(history_leaf(leaf))
    forged = sign_checkpoint(
        signer,
        origin=ORIGIN,
        sequence=3,
        leaves={leaf.match_id: leaf for leaf in rewritten},
        position=1100,
        history=cut,
        issued_at=format_recorded_at(START + timedelta(hours=1, minutes=11)),
    )
    return {
        "history": [{"leaf": leaf, "leaf_hash": history_leaf(leaf).hex()} for leaf in leaves],
        "holds": [
            proof(4, 11, history, signed[11]),
            proof(5, 11, history, signed[11]),
            proof(4, 5, history, signed[5]),
        ],
        "cut": {
            "proof": proof(4, len(rewritten), cut, forged),
            "reason": "not_consistent",
            "what": "leaf 3 removed between checkpoints 1 and 3; checkpoint 3 re-signed",
        },
    }


def _record(signer: SigningKey, match_id: str, events: list[tuple[Event, str]]) -> MatchRecord:
    """A signed, checkpointed record of these events (what ``GET …/record`` serves)."""
    chained = _chained(match_id, events)
    record, _ = record_of_events(
        match_id, chained, names={}, ladder_name=None, hide_hands_in_replay=False
    )
    seed = record.headers.seed
    leaves = _other_leaves()
    last = chained[-1]
    leaves[match_id] = Leaf(
        match_id, last.version, blinded(head_salt(seed), bytes.fromhex(last.hash)).hex()
    )
    return msgspec.structs.replace(
        record,
        receipt=_receipt(signer, match_id, last, seed),
        keys=[signer.public()],
        checkpoint=_checkpoint(signer, leaves, match_id),
    )


def small_match() -> list[tuple[Event, str]]:
    """A whole duel between two random bots, reproducible, each event with the
    actor of the command it follows from (``play_match``'s loop, remembering who
    asked)."""
    rng = random.Random(29)
    start = StartMatch(
        match_id=MATCH_ID,
        players=("p0", "p1"),
        ruleset=DUEL,
        first_dealer=rng.choice((0, 1)),
        seed=rng.getrandbits(256).to_bytes(32, "big").hex(),
    )
    table = Table()
    log = [(e, "system") for e in run(table, start)]
    while table.phase != "ended":
        seat = table.to_move
        if seat is None:
            seat = 0 if must_keep(table, 0) else 1
        command = random_bot(table, seat, rng)
        log += [(e, start.players[seat]) for e in run(table, command)]
    return log


def _replace_event(
    events: list[tuple[Event, str]], pick: Callable[[Event], bool], change: Callable[[Any], Event]
) -> tuple[list[tuple[Event, str]], int]:
    for i, (event, actor) in enumerate(events):
        if pick(event):
            return [*events[:i], (change(event), actor), *events[i + 1 :]], i
    raise LookupError("no such event in the vector match")


def forged_records(
    signer: SigningKey, good: MatchRecord, events: list[tuple[Event, str]]
) -> list[tuple[str, str, str, MatchRecord]]:
    """(name, reason code, what was done, record): every kind of forgery a verifier
    must refuse, the reason code the browser's verifier gives first."""
    out: list[tuple[str, str, str, MatchRecord]] = []

    # 1. An event edited in place, its hash left: the chain breaks there.
    played, i = _replace_event(
        events,
        lambda e: isinstance(e, CardPlayed),
        lambda e: msgspec.structs.replace(e, target="suit" if e.target == "number" else "number"),
    )
    edited = list(good.events)
    edited[i] = msgspec.structs.replace(edited[i], event=played[i][0])
    out.append(
        (
            "event-edited",
            "hash_mismatch",
            f"event {i + 1}'s target changed, every hash left as it was",
            msgspec.structs.replace(good, events=edited),
        )
    )

    # 2. The same edit with the chain re-hashed from there: the receipt no longer holds.
    rehashed = _chained(MATCH_ID, played)
    headers = msgspec.structs.replace(good.headers, final_hash=rehashed[-1].hash)
    out.append(
        (
            "chain-rehashed",
            "receipt_mismatch",
            f"event {i + 1}'s target changed and the chain re-hashed; the service's receipt kept",
            msgspec.structs.replace(good, headers=headers, events=rehashed),
        )
    )

    # 3. Events cut off the end: the receipt signs a version the record lacks.
    cut = list(good.events[:-2])
    out.append(
        (
            "truncated",
            "events_removed",
            "the last two events removed",
            msgspec.structs.replace(
                good,
                events=cut,
                headers=msgspec.structs.replace(good.headers, final_hash=cut[-1].hash),
            ),
        )
    )

    # 4. Two events swapped: the links break.
    swapped = list(good.events)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    out.append(
        (
            "events-swapped",
            "version_gap",
            "events 4 and 5 swapped",
            msgspec.structs.replace(good, events=swapped),
        )
    )

    # 5. The receipt's signature altered.
    assert good.receipt is not None
    sig = bytearray(base64.b64decode(good.receipt.signature))
    sig[0] ^= 1
    bad_receipt = msgspec.structs.replace(
        good.receipt, signature=base64.b64encode(bytes(sig)).decode()
    )
    out.append(
        (
            "receipt-signature",
            "bad_signature",
            "one bit of the receipt's signature flipped",
            msgspec.structs.replace(good, receipt=bad_receipt),
        )
    )

    # 6. A receipt signed by a key the service never published.
    stranger = SigningKey(Ed25519PrivateKey.from_private_bytes(bytes(32)))
    last = good.events[-1]
    out.append(
        (
            "unknown-key",
            "unknown_key",
            "the receipt re-signed by a key not in the service's keyring",
            msgspec.structs.replace(
                good, receipt=_receipt(stranger, MATCH_ID, last, good.headers.seed)
            ),
        )
    )

    # 7. A deal not from the seed, re-hashed and re-signed (a lying service).
    reordered, j = _replace_event(
        events,
        lambda e: isinstance(e, HandDealt),
        lambda e: msgspec.structs.replace(e, hands=(tuple(reversed(e.hands[0])), e.hands[1])),
    )
    out.append(
        (
            "deal-forged",
            "deal_mismatch",
            f"hand 1's deal (event {j + 1}) changed: seat 0's cards in another order; the "
            "chain re-hashed and re-signed with the service's own key",
            _record(signer, MATCH_ID, reordered),
        )
    )

    # 8. Another seed revealed at the end, re-hashed and re-signed.
    other_seed = hashlib.sha256(b"another seed").hexdigest()
    reseeded, k = _replace_event(
        events,
        lambda e: isinstance(e, MatchEnded),
        lambda e: msgspec.structs.replace(e, seed=other_seed),
    )
    out.append(
        (
            "seed-replaced",
            "seed_commitment",
            f"the seed revealed by event {k + 1} replaced by another; re-hashed and re-signed",
            _record(signer, MATCH_ID, reseeded),
        )
    )

    # 9. The checkpoint's inclusion proof altered.
    assert good.checkpoint is not None
    path = list(good.checkpoint.path)
    path[0] = ("0" if path[0][0] != "0" else "1") + path[0][1:]
    out.append(
        (
            "checkpoint-path",
            "not_included",
            "one hex digit of the checkpoint's audit path changed",
            msgspec.structs.replace(
                good, checkpoint=msgspec.structs.replace(good.checkpoint, path=path)
            ),
        )
    )
    return out


def _row_vector(
    name: str, event: Event, *, match_id: str, version: int, actor: str, prev: bytes, at: datetime
) -> dict[str, Any]:
    data = encode_event(event)
    canonical = canonical_bytes(
        match_id=match_id, version=version, actor=actor, recorded_at=at, event_bytes=data
    )
    return {
        "name": name,
        "event": msgspec.json.decode(data),
        "event_bytes": data.decode(),
        "row": {
            "match_id": match_id,
            "version": version,
            "actor": actor,
            "recorded_at": format_recorded_at(at),
            "prev_hash": prev.hex(),
        },
        "canonical_bytes": canonical.hex(),
        "hash": row_hash(
            prev, match_id=match_id, version=version, actor=actor, recorded_at=at, event_bytes=data
        ).hex(),
    }


def event_vectors(signer: SigningKey, events: list[tuple[Event, str]]) -> list[dict[str, Any]]:
    """The first event of every type the match holds, then the types it does not,
    written by hand (terms with a clock and a fractional delay, a dispute with a
    receipt and a reason that needs escaping, an abort's no-show)."""
    out: list[dict[str, Any]] = []
    chained = _chained(MATCH_ID, events)
    seen: set[type] = set()
    for (event, actor), rec in zip(events, chained, strict=True):
        if type(event) in seen:
            continue
        seen.add(type(event))
        out.append(
            _row_vector(
                f"{rec.version:02d}-{type(event).__name__}",
                event,
                match_id=MATCH_ID,
                version=rec.version,
                actor=actor,
                prev=bytes.fromhex(rec.prev_hash),
                at=datetime.fromisoformat(rec.recorded_at),
            )
        )
    created = events[0][0]
    assert isinstance(created, MatchCreated)
    receipt = _receipt(signer, MATCH_ID, chained[2], None)
    extra: list[tuple[str, Event]] = [
        (
            "MatchCreated-with-terms",
            msgspec.structs.replace(
                created,
                ladder_id="blitz",
                terms=MatchTerms(
                    spectator_delay_s=2.5,
                    dispute_window_s=3600,
                    clock=RealTime(base_s=180, increment_s=2),
                ),
            ),
        ),
        ("Passed-automatic", Passed(seat=1, hand=2, round=3, automatic=True)),
        (
            "MatchEnded-aborted",
            MatchEnded(winner=None, reason="aborted", seed="ab" * 32, no_show=0),
        ),
        (
            "DisputeFiled-with-receipt",
            DisputeFiled(
                dispute_id="d-1",
                seat=0,
                player="p0",
                reason='Le thé "froid"\tétait\nfaux \\ 茶 \u0001',
                receipts=(receipt,),
            ),
        ),
        (
            "DisputeDecided",
            DisputeDecided(dispute_id="d-1", upheld=True, admin="root", reason="ok"),
        ),
        ("MatchAnnulled", MatchAnnulled(admin="root", reason="upheld", dispute_id="d-1")),
    ]
    prev = hashlib.sha256(b"some previous hash").digest()
    for n, (name, event) in enumerate(extra):
        out.append(
            _row_vector(
                name,
                event,
                match_id="vector-extra",
                version=40 + n,
                actor="system",
                prev=prev,
                at=START + timedelta(days=1, microseconds=n),
            )
        )
    return out


def seed_vectors(events: list[tuple[Event, str]]) -> dict[str, Any]:
    created = events[0][0]
    ended = events[-1][0]
    assert isinstance(created, MatchCreated) and isinstance(ended, MatchEnded)
    seed = ended.seed
    bound = dealing.binding_of(created)
    worked = bytes(range(32)).hex()
    return {
        "match": {
            "match_id": created.match_id,
            "players": list(created.players),
            "ladder_id": created.ladder_id,
            "ruleset_json": msgspec.json.encode(created.ruleset).decode(),
            "first_dealer": created.first_dealer,
            "seed": seed,
            "binding": bound.hex(),
            "seed_commitment_v2": dealing.bound_commitment(seed, bound),
            "seed_commitment_v1": dealing.commitment(seed),
            "head_salt": head_salt(seed).hex(),
        },
        "worked_example": {
            "seed": worked,
            "seed_commitment_v1": dealing.commitment(worked),
            "first_words_1_1": list(_take(dealing.stream(bytes(range(32)), 1, 1), 10)),
            "deal": msgspec.to_builtins(dealing.deal(worked, 1, 0)),
        },
        "deals": [msgspec.to_builtins(e) for e, _ in events if isinstance(e, HandDealt)],
    }


def _take(it: Any, n: int) -> list[int]:
    return [next(it) for _ in range(n)]


def _json(value: Any) -> bytes:
    return msgspec.json.format(msgspec.json.encode(value), indent=1) + b"\n"


def build() -> dict[Path, bytes]:
    """Every generated file and its bytes (nothing written)."""
    signer = test_key()
    keyring = Keyring([signer.public()])
    events = small_match()
    good = _record(signer, MATCH_ID, events)
    _, problems = verify_record(encode_record(good), [], keyring)
    if problems:
        raise AssertionError(f"the good record does not verify: {problems}")

    files: dict[Path, bytes] = {}
    forged_index = []
    for name, reason, what, record in forged_records(signer, good, events):
        _, problems = verify_record(encode_record(record), [], keyring)
        if not problems:
            raise AssertionError(f"matcha verify accepts the forged record {name}")
        files[VECTORS / "forged" / f"{name}.json"] = _json(record)
        forged_index.append(
            {"file": f"forged/{name}.json", "reason": reason, "what": what, "python": problems}
        )
    chained = good.events
    mid = chained[4]
    receipt = _receipt(signer, MATCH_ID, mid, good.headers.seed)
    assert good.checkpoint is not None
    cp = good.checkpoint.checkpoint
    files[VECTORS / "keys.json"] = _json(
        {
            "format": "matcha-keyring/1",
            "keys": [signer.public()],
            "test_private_key": TEST_KEY_BYTES.hex(),
        }
    )
    files[VECTORS / "events.json"] = _json(event_vectors(signer, events))
    files[VECTORS / "seed-and-deals.json"] = _json(seed_vectors(events))
    files[VECTORS / "receipt.json"] = _json(
        {
            "receipt": receipt,
            "chain_hash": mid.hash,
            "seed": good.headers.seed,
            "head_salt": head_salt(good.headers.seed).hex(),
            "message": head_message(
                key_id=receipt.key_id,
                match_id=receipt.match_id,
                version=receipt.version,
                blinded_hash=bytes.fromhex(receipt.blinded_hash),
                recorded_at=receipt.server_time,
            ).hex(),
        }
    )
    leaves = {**_other_leaves(), MATCH_ID: good.checkpoint.leaf}
    ids, hashes = tree_leaves(leaves)
    files[VECTORS / "checkpoint.json"] = _json(
        {
            "leaves": [
                {
                    "leaf": leaves[m],
                    "leaf_data": leaf_data(leaves[m]).hex(),
                    "leaf_hash": h.hex(),
                }
                for m, h in zip(ids, hashes, strict=True)
            ],
            "proof": good.checkpoint,
            "message": checkpoint_message(
                origin=cp.origin,
                sequence=cp.sequence,
                tree_size=cp.tree_size,
                root=bytes.fromhex(cp.root),
                position=cp.position,
                issued_at=cp.issued_at,
                key_id=cp.key_id,
                history_size=cp.history_size,  # type: ignore[arg-type]
                history_root=bytes.fromhex(cp.history_root),  # type: ignore[arg-type]
            ).hex(),
        }
    )
    consistency = consistency_vectors(signer)
    for held in consistency["holds"]:
        if consistency_problem(held, keyring) is not None:
            raise AssertionError(f"a consistency vector does not hold: {held}")
    if consistency_problem(consistency["cut"]["proof"], keyring) is None:
        raise AssertionError("the proof over a cut log verifies")
    files[VECTORS / "checkpoint-consistency.json"] = _json(consistency)
    files[VECTORS / "record-good.json"] = _json(good)
    files[VECTORS / "forged.json"] = _json(forged_index)

    table = field_table()
    files[VECTORS / "fields.json"] = table_json(table)
    files[JS_FIELDS] = (
        b"// Generated by `python -m service.vectors` from schemas/: do not edit.\n"
        b"// The field order of every event and nested type (docs/evidence-spec.md).\n"
        b"export const FIELDS = " + msgspec.json.encode({s.name: s for s in table}) + b";\n"
    )
    spec = SPEC.read_text()
    head, _, rest = spec.partition(BEGIN)
    _, _, tail = rest.partition(END)
    files[SPEC] = (head + BEGIN + "\n\n" + markdown(table) + "\n" + END + tail).encode()
    return files


def main(argv: list[str]) -> int:
    files = build()
    stale = [p for p, data in files.items() if not p.exists() or p.read_bytes() != data]
    if "--check" in argv:
        for p in stale:
            print(f"stale: {p.relative_to(ROOT)}")
        return 1 if stale else 0
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(files[p])
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
