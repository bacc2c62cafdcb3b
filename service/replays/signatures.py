"""What the service signed about a match record, checked against its keys: the
record's final receipt, its checkpoint proof, and any receipt a player holds
(``matcha verify`` and ``POST /api/records/check`` both ask here; ``check``
checks the record itself)."""

from __future__ import annotations

from service.evidence.checkpoints import proof_problem
from service.evidence.keys import Keyring
from service.evidence.receipts import Receipt, receipt_holds, receipt_problem
from service.replays.record import MatchRecord


def _receipt_against_record(
    receipt: Receipt, hashes: dict[int, bytes], seed: str | None, match_id: str, what: str
) -> str | None:
    if receipt.match_id != match_id:
        return f"{what} is for match {receipt.match_id!r}, not {match_id!r}"
    chain_hash = hashes.get(receipt.version)
    last = max(hashes, default=0)
    if chain_hash is None:
        return (
            f"{what} shows the log reached version {receipt.version} (at "
            f"{receipt.server_time}), but the record ends at version {last}: events were removed"
        )
    if seed is None:
        return f"{what}: the record reveals no seed, so its blinded hash cannot be checked"
    if not receipt_holds(receipt, chain_hash, seed):
        return (
            f"{what} signs another version {receipt.version} than the record's: the log was "
            "rewritten"
        )
    return None


def signed_checks(
    record: MatchRecord,
    receipts: list[tuple[str, Receipt]],
    keyring: Keyring,
    *,
    require_receipt: bool = True,
) -> tuple[list[str], list[str]]:
    """(what holds, what does not) of what the service signed about ``record``: its
    final receipt, its checkpoint proof, and each receipt given."""
    ok: list[str] = []
    problems: list[str] = []
    match_id = record.headers.match_id
    hashes: dict[int, bytes] = {}
    for e in record.events:
        try:
            hashes[e.version] = bytes.fromhex(e.hash)
        except ValueError:
            problems.append(f"event {e.version}: its hash is not hex")
    seed = record.headers.seed
    last = max(hashes, default=0)
    final = record.receipt
    if final is None:
        if require_receipt:
            problems.append("the record carries no receipt: nothing signed by the service")
    else:
        found = receipt_problem(final, keyring) or _receipt_against_record(
            final, hashes, seed, match_id, "the record's receipt"
        )
        if found is not None:
            problems.append(found)
        elif final.version != last:
            problems.append(
                f"the record's receipt signs version {final.version}, but the record goes on to "
                f"version {last}: events after it are not signed"
            )
        else:
            ok.append(
                f"receipt: version {final.version} signed by key {final.key_id} at "
                f"{final.server_time}"
            )
    if record.checkpoint is not None:
        proof = record.checkpoint
        found = proof_problem(proof, keyring)
        if found is None and proof.leaf.match_id != match_id:
            found = f"the checkpoint proof is for match {proof.leaf.match_id!r}"
        if found is None:
            as_receipt = Receipt(
                match_id=match_id,
                version=proof.leaf.version,
                blinded_hash=proof.leaf.hash,
                server_time=proof.checkpoint.issued_at,
                key_id=proof.checkpoint.key_id,
                signature="",
            )
            found = _receipt_against_record(
                as_receipt, hashes, seed, match_id, f"checkpoint {proof.checkpoint.sequence}"
            )
        if found is not None:
            problems.append(found)
        else:
            ok.append(
                f"checkpoint: {proof.checkpoint.sequence} ({proof.checkpoint.tree_size} matches, "
                f"signed {proof.checkpoint.issued_at}) holds version {proof.leaf.version}"
            )
    for name, receipt in receipts:
        found = receipt_problem(receipt, keyring)
        if found is not None:
            problems.append(f"{name}: {found}")
            continue
        found = _receipt_against_record(receipt, hashes, seed, match_id, name)
        if found is not None:
            problems.append(found)
        else:
            ok.append(f"{name}: version {receipt.version} holds")
    return ok, problems
