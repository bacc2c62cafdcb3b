"""The audit's evidence checks (pure): signatures on the rows, the latest
checkpoint, receipts presented. ``service.audit.audit.build_report`` runs them.

They live in the audit (not in ``service.evidence``): the evidence package makes
and verifies signatures, receipts and checkpoints; the audit, above it, judges a
log against them. Imports run one way, audit -> evidence.

What each finding names (docs/audit.md "Evidence"):

* **signatures**: the first row no valid service signature covers. A row is
  covered by a signature at its own version or at a later row of the log,
  which commits to it through the chain; so an INSERT made without the key is
  named at that row, and a rewrite with the chain recomputed is named at the
  first row of the append it changed (its signature signs the old hash).
* **checkpoint** / **receipts**: a signed statement that the log reached
  version v with hash h. A log that now ends before v was cut (named at the
  first missing version); one that holds another hash at v was rewritten
  (named at v).
"""

from __future__ import annotations

from collections.abc import Sequence

from service.audit.report import EvidenceCheck, Finding, SignatureCheck
from service.audit.rows import RawRow
from service.evidence.checkpoints import InclusionProof, proof_problem
from service.evidence.keys import Keyring
from service.evidence.receipts import Receipt, receipt_problem
from service.store.heads import blinded, row_head_message


def _signed(row: RawRow, keyring: Keyring, salt: bytes) -> bool:
    if row.signature is None:
        return False
    message = row_head_message(
        key_id=row.key_id,
        match_id=row.match_id,
        version=row.version,
        hash_=row.hash,
        recorded_at=row.recorded_at,
        salt=salt,
    )
    return keyring.verify(row.key_id, message, row.signature)


def signature_check(
    rows: Sequence[RawRow], keyring: Keyring | None, salt: bytes, *, unsigned_up_to: int = 0
) -> SignatureCheck:
    """Every row after the signing epoch is covered by a valid service signature."""
    if keyring is None or not len(keyring):
        return SignatureCheck(
            status="skipped", note="no public keys were given: signatures not checked"
        )
    legacy = [r for r in rows if r.position <= unsigned_up_to]
    uncovered: list[RawRow] = []
    signed = 0
    keys: list[str] = []
    bad: RawRow | None = None
    for row in rows:
        if row.position <= unsigned_up_to:
            continue
        if _signed(row, keyring, salt):
            signed += 1
            if row.key_id and row.key_id not in keys:
                keys.append(row.key_id)
            uncovered = []
            bad = None
            continue
        if row.signature is not None and bad is None:
            bad = row
        uncovered.append(row)
    # The chain links each row to the next, so a valid signature at version v
    # covers every row up to v: only a run of rows after the last one is
    # uncovered. (A broken chain is the chain check's finding.)
    if not uncovered:
        return SignatureCheck(
            status="consistent", signed_rows=signed, legacy_rows=len(legacy), keys=keys
        )
    first, last = uncovered[0], uncovered[-1]
    span = (
        f"version {first.version}"
        if first is last
        else f"versions {first.version} to {last.version}"
    )
    if bad is not None:
        why = f"the signature at version {bad.version} does not verify" + (
            f" (key {bad.key_id!r} is not in the keyring)"
            if bad.key_id not in keyring
            else ": it signs another hash, so the rows were rewritten after it was made"
        )
    else:
        why = "no service signature follows: appended by someone without the service's key"
    return SignatureCheck(
        status="inconsistent",
        signed_rows=signed,
        legacy_rows=len(legacy),
        keys=keys,
        first_unsigned=Finding.at(
            first,
            problem=f"{span} {'is' if first is last else 'are'} not signed by the service: {why}",
        ),
    )


def _against(
    rows: Sequence[RawRow], version: int, blind_hex: str, salt: bytes, source: str
) -> Finding | None:
    """The log against a signed (version, hash): cut, rewritten, or holding it."""
    by_version = {r.version: r for r in rows}
    row = by_version.get(version)
    if row is None:
        end = max(by_version, default=0)
        if end < version:
            return Finding(
                version=end + 1,
                problem=f"the log ends at version {end}, but {source} shows it reached version "
                f"{version}: "
                + (
                    f"event {version} was removed"
                    if end + 1 == version
                    else f"events {end + 1} to {version} were removed"
                ),
                expected={"version": version, "blinded_hash": blind_hex},
            )
        return Finding(
            version=version, problem=f"version {version}, which {source} signs, is missing"
        )
    if blinded(salt, row.hash).hex() != blind_hex:
        return Finding.at(
            row,
            problem=f"version {version} is not the one {source} signs: the log was rewritten "
            "up to here",
            path="blinded_hash",
            logged=blinded(salt, row.hash).hex(),
            expected=blind_hex,
        )
    return None


def evidence_check(
    rows: Sequence[RawRow],
    keyring: Keyring | None,
    salt: bytes,
    *,
    proof: InclusionProof | None = None,
    receipts: Sequence[Receipt] = (),
    checkpoint_note: str | None = None,
) -> EvidenceCheck:
    """The log against the latest checkpoint that holds the match, and receipts."""
    if keyring is None or not len(keyring):
        return EvidenceCheck(
            status="skipped", note="no public keys were given: evidence not checked"
        )
    match_id = rows[0].match_id if rows else None
    findings: list[Finding] = []
    notes: list[str] = []
    checked_receipts = 0
    for receipt in receipts:
        if receipt.match_id != match_id:
            findings.append(
                Finding(
                    version=None,
                    problem=f"a receipt presented is for match {receipt.match_id!r}, not this one",
                )
            )
            continue
        problem = receipt_problem(receipt, keyring)
        if problem is not None:
            findings.append(
                Finding(
                    version=receipt.version,
                    problem=f"a receipt presented for version "
                    f"{receipt.version} is not valid: {problem}",
                )
            )
            continue
        checked_receipts += 1
        found = _against(
            rows,
            receipt.version,
            receipt.blinded_hash,
            salt,
            f"a receipt issued at {receipt.server_time}",
        )
        if found is not None:
            findings.append(found)
    sequence = version = None
    if proof is not None:
        problem = proof_problem(proof, keyring)
        if problem is not None:
            findings.append(Finding(version=None, problem=f"checkpoint: {problem}"))
        else:
            sequence, version = proof.checkpoint.sequence, proof.leaf.version
            found = _against(
                rows,
                proof.leaf.version,
                proof.leaf.hash,
                salt,
                f"checkpoint {proof.checkpoint.sequence} (signed {proof.checkpoint.issued_at})",
            )
            if found is not None:
                findings.append(found)
    elif checkpoint_note:
        notes.append(checkpoint_note)
    if not receipts:
        notes.append("no receipts presented")
    if not findings:
        status = "consistent" if proof is not None or checked_receipts else "skipped"
        return EvidenceCheck(
            status=status,  # type: ignore[arg-type]
            checkpoint=sequence,
            checkpoint_version=version,
            receipts=checked_receipts,
            note="; ".join(notes) or None,
        )
    findings.sort(key=lambda f: (f.version is None, f.version or 0))
    return EvidenceCheck(
        status="inconsistent",
        checkpoint=sequence,
        checkpoint_version=version,
        receipts=checked_receipts,
        first_problem=findings[0],
        note="; ".join(notes) or None,
    )
