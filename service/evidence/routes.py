"""Evidence over HTTP: the public keys, the latest checkpoint, the consistency proof
between two checkpoints, one match's inclusion proof, and checking receipts against
the log (docs/api.md, docs/audit.md, docs/evidence-spec.md)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import get, post
from litestar.datastructures import State
from litestar.params import QueryParameter
from psycopg_pool import AsyncConnectionPool

from schemas.bounds import INT32_MAX
from schemas.receipts import ReceiptsBody
from service.errors import NotFound
from service.evidence.checkpoints import (
    Checkpoint,
    CheckpointLog,
    ConsistencyProof,
    InclusionProof,
)
from service.evidence.keys import KeyringFile
from service.evidence.receipts import receipt_holds, receipt_problem
from service.evidence.service import Evidence
from service.store import matchlog
from service.store.ops import run_async


def _evidence(state: State) -> Evidence:
    evidence: Evidence = state.evidence
    return evidence


def _log(state: State) -> CheckpointLog:
    log = _evidence(state).checkpoints
    if log is None:
        raise NotFound("No checkpoint has been signed yet.", code="no_checkpoint")
    log.refresh()
    return log


@get("/api/keys", operation_id="getPublicKeys", tags=["evidence"], security=[])
async def public_keys(state: State) -> KeyringFile:
    """Every public key the service has signed with (retired ones too): what a
    receipt, a checkpoint or a record is verified with, offline."""
    return KeyringFile(keys=_evidence(state).keyring.keys())


@get("/api/checkpoints/latest", operation_id="getLatestCheckpoint", tags=["evidence"], security=[])
async def latest_checkpoint(state: State) -> Checkpoint:
    """The latest signed checkpoint: a Merkle root over every match's latest signed head."""
    log = _log(state)
    if log.latest is None:
        raise NotFound("No checkpoint has been signed yet.", code="no_checkpoint")
    return log.latest


@get(
    "/api/checkpoints/consistency",
    operation_id="getCheckpointConsistency",
    tags=["evidence"],
    security=[],
)
async def checkpoint_consistency(
    state: State,
    first: Annotated[int, QueryParameter(ge=1, le=INT32_MAX)],
    second: Annotated[int | None, QueryParameter(ge=1, le=INT32_MAX)] = None,
) -> ConsistencyProof:
    """Checkpoints ``first`` and ``second`` (by sequence; default: the latest) and the
    RFC 9162 consistency proof that the second's history tree extends the first's: a
    client that kept the checkpoint it last saw checks that nothing checkpointed since
    was removed or rewritten."""
    log = _log(state)
    if log.latest is None:
        raise NotFound("No checkpoint has been signed yet.", code="no_checkpoint")
    proof = log.consistency(first, second if second is not None else log.latest.sequence)
    if proof is None:
        raise NotFound(
            "No such pair of checkpoints signs a history (both must exist, in order, "
            "and be matcha-checkpoint/2).",
            code="no_consistency_proof",
        )
    return proof


@get(
    "/api/matches/{match_id:str}/checkpoint",
    operation_id="getMatchCheckpoint",
    tags=["evidence"],
    security=[],
)
async def match_checkpoint(match_id: str, state: State) -> InclusionProof:
    """The match's leaf in the latest checkpoint and its inclusion proof (RFC 9162).
    The leaf holds the head's hash blinded with a salt from the secret seed, so a
    live match's proof reveals nothing about its hidden cards."""
    proof = _log(state).proof(match_id)
    if proof is None:
        raise NotFound("No checkpoint holds this match yet.", code="not_checkpointed")
    return proof


class ReceiptVerdict(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    signature_ok: bool
    held: bool
    """The log still holds this version with the hash the receipt blinds."""
    problem: str | None = None


class ReceiptsCheck(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    version: int
    """The log's version now."""
    consistent: bool
    receipts: list[ReceiptVerdict]


@post(
    "/api/matches/{match_id:str}/receipts/check",
    operation_id="checkReceipts",
    tags=["evidence"],
    security=[],
    status_code=200,
)
async def check_receipts(
    match_id: str, data: ReceiptsBody, state: State, pool: AsyncConnectionPool
) -> ReceiptsCheck:
    """Does the log still hold what these receipts say it reached? Anyone may ask:
    the answer is yes or no per receipt, nothing of the log itself."""
    keyring = _evidence(state).keyring
    async with pool.connection() as conn:
        rows = {
            link.version: link.hash
            for link in await run_async(conn, matchlog.chain_of_match(match_id))
        }
        cur = await conn.execute("SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,))
        seed_row = await cur.fetchone()
    if not rows:
        raise NotFound("No match has this id.", code="match_not_found")
    seed = None if seed_row is None else str(seed_row[0])
    verdicts: list[ReceiptVerdict] = []
    for receipt in data.receipts:
        problem = (
            f"the receipt is for match {receipt.match_id!r}"
            if receipt.match_id != match_id
            else receipt_problem(receipt, keyring)
        )
        if problem is not None:
            verdicts.append(
                ReceiptVerdict(
                    version=receipt.version, signature_ok=False, held=False, problem=problem
                )
            )
            continue
        chain_hash = rows.get(receipt.version)
        held = chain_hash is not None and receipt_holds(receipt, chain_hash, seed)
        verdicts.append(
            ReceiptVerdict(
                version=receipt.version,
                signature_ok=True,
                held=held,
                problem=None
                if held
                else (
                    f"the log ends at version {max(rows)}: events were removed"
                    if chain_hash is None
                    else f"version {receipt.version} was rewritten after this receipt"
                ),
            )
        )
    return ReceiptsCheck(
        match_id=match_id,
        version=max(rows),
        consistent=all(v.held for v in verdicts),
        receipts=verdicts,
    )


ROUTES: list[Any] = [
    public_keys,
    latest_checkpoint,
    checkpoint_consistency,
    match_checkpoint,
    check_receipts,
]
