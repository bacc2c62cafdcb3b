"""What the public record route adds from the evidence: the final receipt, the
public keys, the match's checkpoint proof, and the audit's problems (here, in
the audit, because it is built on the audit: the evidence package never
imports the audit).

A record whose rows the service did not sign is not served (it could be a
forged end that would show a live match's hidden cards): the route answers a
problem+json listing what the audit found. Otherwise the record lists the
audit's problems (``problems``, empty when it holds up).
"""

from __future__ import annotations

from typing import Any

import msgspec

from service.audit.audit import audit_match
from service.audit.report import AuditReport
from service.evidence.checkpoints import InclusionProof
from service.evidence.keys import PublicKey
from service.evidence.receipts import Receipt, receipt_of
from service.evidence.service import Evidence
from service.store import matchlog
from service.store.heads import head_salt
from service.store.ops import run_async


class RecordEvidence(msgspec.Struct, frozen=True, kw_only=True):
    receipt: Receipt | None
    keys: list[PublicKey]
    checkpoint: InclusionProof | None
    report: AuditReport


async def record_evidence(conn: Any, match_id: str, evidence: Evidence | None) -> RecordEvidence:
    """The audit of the match with the service's keys and checkpoint, and the
    receipt of its last signed row."""
    report = await audit_match(conn, match_id, evidence)
    receipt = await signed_receipt(conn, match_id)
    proof = None if evidence is None else (await evidence.bind(conn)).proof(match_id)
    return RecordEvidence(
        receipt=receipt,
        keys=[] if evidence is None else evidence.keyring.keys(),
        checkpoint=proof,
        report=report,
    )


async def signed_receipt(conn: Any, match_id: str, before: int | None = None) -> Receipt | None:
    """The receipt of the match's last signed row (below version ``before``, if given)."""
    found = await run_async(conn, matchlog.last_signed_row(match_id, before=before))
    if found is None:
        return None
    signed = _Row(
        match_id=found.match_id,
        version=found.version,
        hash=found.hash,
        recorded_at=found.recorded_at,
        key_id=found.key_id,
        signature=found.signature,
    )
    return receipt_of(signed, head_salt(found.seed))


class _Row(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    version: int
    hash: bytes
    recorded_at: Any
    key_id: str | None
    signature: bytes | None
    blinded_hash: bytes | None = None


def unsigned(report: AuditReport) -> bool:
    """The service did not sign this log as it stands: serve none of it."""
    return report.signatures.status == "inconsistent"
