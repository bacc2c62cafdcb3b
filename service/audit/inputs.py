"""What the audit reads beside a match's rows: the stored seed, the service's
public keys and its checkpoint log, the receipts presented, the signing epoch,
and whether another match shares the seed.

Every reader of an audit (``matcha audit``, the API, the web page through the
API, the record route) hands ``read_inputs`` the ``Evidence`` it holds: the
API its own (``app.state.evidence``), the console the one of the data folder
``matcha run`` keeps (``service.evidence.service.evidence_at``). Given the same
evidence, they get the same report and the same verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from service.audit.fairness import revealed_seed
from service.audit.rows import RawRow
from service.evidence.checkpoints import InclusionProof
from service.evidence.keys import Keyring
from service.evidence.receipts import Receipt
from service.evidence.service import Evidence
from service.store import matchlog
from service.store.events import unsigned_up_to
from service.store.ops import run_async


@dataclass(frozen=True)
class AuditInputs:
    """Everything ``build_report`` checks the rows against (all optional: a pure
    test gives only what it needs)."""

    stored_seed: str | None = None
    """The secret seed kept beside the log (admins only): re-folds a live match,
    and names the fault when a finished match's revealed seed was forged."""
    keyring: Keyring | None = None
    """The service's public keys (None: signatures and evidence are not checked)."""
    unsigned_up_to: int = 0
    """The last log position written before the service signed anything."""
    checkpoint: InclusionProof | None = None
    checkpoint_note: str | None = None
    """Why there is no checkpoint to check against, when there is none."""
    receipts: Sequence[Receipt] = field(default_factory=tuple)
    seed_reused_by: str | None = None
    """Another match dealt from (or revealing) the same seed."""


NOTHING = AuditInputs()


async def load_stored_seed(conn: Any, match_id: str) -> str | None:
    cur = await conn.execute("SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,))
    row = await cur.fetchone()
    return row[0] if row else None


async def seed_reused_by(conn: Any, match_id: str, seed: str | None) -> str | None:
    """Another match that was dealt from (or revealed) the same seed, if any."""
    if seed is None:
        return None
    return await run_async(conn, matchlog.seed_used_elsewhere(seed, match_id))


def presented_in_disputes(rows: Sequence[RawRow]) -> list[Receipt]:
    """The receipts the players presented with their disputes: every audit checks them."""
    found: list[Receipt] = []
    for row in rows:
        if row.type == "dispute_filed":
            try:
                found += msgspec.convert(row.data.get("receipts") or [], list[Receipt])
            except msgspec.ValidationError:
                continue  # a forged row: the chain and signature checks name it
    return found


async def _checkpoint(
    conn: Any, match_id: str, evidence: Evidence
) -> tuple[InclusionProof | None, str | None]:
    """The match's proof in the latest checkpoint, or why there is none."""
    log = await evidence.bind(conn)
    log.refresh()
    proof = log.proof(match_id)
    if proof is not None:
        return proof, None
    if log.latest is not None:
        return None, "no checkpoint holds this match yet"
    return None, f"no checkpoint in {log.path}"


async def read_inputs(
    conn: Any,
    match_id: str,
    rows: Sequence[RawRow],
    evidence: Evidence | None,
    receipts: Sequence[Receipt] = (),
) -> AuditInputs:
    """What the audit of ``rows`` (one match's, read from ``conn``) checks them against."""
    stored = await load_stored_seed(conn, match_id)
    proof, note = None, None
    keyring = None
    if evidence is not None and len(evidence.keyring):
        keyring = evidence.keyring
        proof, note = await _checkpoint(conn, match_id, evidence)
    return AuditInputs(
        stored_seed=stored,
        keyring=keyring,
        unsigned_up_to=await unsigned_up_to(conn) if keyring is not None else 0,
        checkpoint=proof,
        checkpoint_note=note,
        receipts=[*receipts, *presented_in_disputes(rows)],
        seed_reused_by=await seed_reused_by(conn, match_id, stored or revealed_seed(rows)[0]),
    )


__all__ = ["NOTHING", "AuditInputs", "presented_in_disputes", "read_inputs"]
