"""Audit one match: read its rows, run every check, build the report.

One audit, three readers: ``matcha audit``, ``GET`` / ``POST
/api/admin/matches/{id}/audit`` and the web audit page (which shows what the
API answers) all call ``audit_seen_by``, so they show the same checks and the same
verdict; what differs is only where each finds the service's evidence (the
API holds its own, the console reads the data folder's: ``inputs``).

* ``build_report`` is pure (rows and ``AuditInputs`` in, report out), so every
  check can be tested without a database; it runs the checks, each in its own
  module (chain, re-fold, fairness, admin events, timing, signatures and
  evidence), and ``verdict`` makes the one verdict from them.
* ``audit_match`` reads the rows and the inputs and builds the whole report.
* ``audit_seen_by`` is that report as the viewer policy lets its reader see it
  (``sight``: the whole of it once the match is over, the public log while it
  is played).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from msgspec.structs import replace

from service.audit.admin_events import admin_check, disputes
from service.audit.chain_check import chain_check, hash_flags
from service.audit.evidence_checks import evidence_check, signature_check
from service.audit.fairness import fairness
from service.audit.inputs import NOTHING, AuditInputs, read_inputs
from service.audit.refold import Engine, refold
from service.audit.report import (
    AuditReport,
    ChainCheck,
    EvidenceCheck,
    FairnessCheck,
    Finding,
    LoggedEvent,
    MatchStatus,
    SignatureCheck,
)
from service.audit.rows import RawRow, match_rows
from service.audit.seeds import SeedChoice, choose_seed, scrubber
from service.audit.sight import seen_report
from service.audit.timing import DEFAULT_GAP_S, timing
from service.audit.verdict import check_lines, verdict
from service.errors import NotFound
from service.evidence.receipts import Receipt
from service.evidence.service import Evidence
from service.fairplay.ladder import flags_naming
from service.matches.policy import Caller
from service.store.heads import head_salt
from service.store.ops import run_async


def _status(rows: Sequence[RawRow]) -> MatchStatus:
    types = {r.type for r in rows}
    if not rows:
        return "empty"
    if "match_annulled" in types:
        return "annulled"
    return "finished" if "match_ended" in types else "live"


def _logged(rows: Sequence[RawRow], chain: ChainCheck) -> list[LoggedEvent]:
    """The omniscient log as stored, each row flagged by its recomputed hash."""
    flags = hash_flags(rows, chain_intact=chain.status == "consistent")
    return [
        LoggedEvent(
            position=r.position,
            version=r.version,
            type=r.type,
            actor=r.actor,
            recorded_at=r.recorded_at,
            data=r.data,
            hash=r.hash.hex(),
            hash_ok=ok,
        )
        for r, ok in zip(rows, flags, strict=True)
    ]


def _fair(
    rows: Sequence[RawRow],
    dealt_from: str | None,
    ended: bool,
    scrub: Callable[[Any], Any],
    reused_by: str | None,
) -> FairnessCheck:
    """The deals against the seed (the revealed one once the match ended, the stored
    one before), its values scrubbed, and a seed another match used."""
    fair = fairness(rows, dealt_from, live=not ended)
    if fair.first_bad_deal is not None:
        bad = fair.first_bad_deal
        return replace(
            fair,
            first_bad_deal=replace(bad, logged=scrub(bad.logged), expected=scrub(bad.expected)),
        )
    if reused_by is not None and rows:
        return replace(
            fair,
            status="inconsistent",
            first_bad_deal=Finding.at(
                rows[0],
                problem=f"the seed of this match is also the seed of match {reused_by}: "
                "a reused seed, whose deals whoever saw the other match can compute",
            ),
        )
    return fair


def _signed(
    rows: Sequence[RawRow], inputs: AuditInputs, seed: SeedChoice
) -> tuple[SignatureCheck, EvidenceCheck]:
    """Signatures, the checkpoint and receipts. Each head is signed blinded with the
    salt of the match's seed (the one the log reveals or the stored one: its value
    never shows)."""
    salt = head_salt(seed.salt_seed)
    signed = signature_check(rows, inputs.keyring, salt, unsigned_up_to=inputs.unsigned_up_to)
    held = evidence_check(
        rows,
        inputs.keyring,
        salt,
        proof=inputs.checkpoint,
        receipts=inputs.receipts,
        checkpoint_note=inputs.checkpoint_note,
    )
    return signed, held


def build_report(
    match_id: str,
    rows: Sequence[RawRow],
    inputs: AuditInputs = NOTHING,
    *,
    gap_threshold_s: float = DEFAULT_GAP_S,
    now: datetime | None = None,
    engine: Engine | None = None,
) -> AuditReport:
    """The whole audit of one match from its raw rows (any order) and ``inputs``.

    The stored seed never appears in the report unless the log itself revealed it.
    """
    rows = sorted(rows, key=lambda r: (r.version, r.position))
    created = next((r.data for r in rows if r.type == "match_created"), {})
    players = [str(p) for p in created.get("players") or []]
    seed = choose_seed(rows, inputs.stored_seed)
    ended = seed.revealed is not None or any(r.type == "match_ended" for r in rows)
    scrub = scrubber(seed.secret)
    chain = chain_check(rows)
    refolded = refold(rows, seed.seed, seed.source, engine, hide=scrub, live=not ended)
    dealt_from = seed.revealed if ended else inputs.stored_seed
    fair = _fair(rows, dealt_from, ended, scrub, inputs.seed_reused_by)
    admin = admin_check(rows)
    signed, held = _signed(rows, inputs, seed)
    lines = check_lines(chain, refolded, fair, admin, signed, held)
    return AuditReport(
        match_id=match_id,
        ladder_id=created.get("ladder_id"),
        players=players,
        status=_status(rows),
        audited_at=now or datetime.now(UTC),
        events=_logged(rows, chain),
        chain=chain,
        refold=refolded,
        fairness=fair,
        admin=admin,
        timing=timing(rows, players, gap_threshold_s=gap_threshold_s),
        disputes=disputes(rows),
        verdict=verdict(lines),
        signatures=signed,
        evidence=held,
        checks=lines,
    )


async def _read(
    conn: Any, match_id: str, evidence: Evidence | None, receipts: Sequence[Receipt]
) -> tuple[list[RawRow], AuditInputs]:
    rows = await match_rows(conn, match_id)
    if not rows:
        raise NotFound(f"There is no match {match_id!r}.", code="match_not_found")
    return rows, await read_inputs(conn, match_id, rows, evidence, receipts)


async def audit_match(
    conn: Any,
    match_id: str,
    evidence: Evidence | None = None,
    *,
    receipts: Sequence[Receipt] = (),
    gap_threshold_s: float = DEFAULT_GAP_S,
) -> AuditReport:
    """The whole report of one match read from ``conn`` (a psycopg ``AsyncConnection``),
    checked against ``evidence`` (None: signatures and checkpoints are not checked,
    and the report says so). For what a reader may see of it: ``audit_seen_by``."""
    rows, inputs = await _read(conn, match_id, evidence, receipts)
    return build_report(match_id, rows, inputs, gap_threshold_s=gap_threshold_s)


async def audit_seen_by(
    conn: Any,
    match_id: str,
    caller: Caller,
    evidence: Evidence | None,
    *,
    receipts: Sequence[Receipt] = (),
    gap_threshold_s: float = DEFAULT_GAP_S,
    now: datetime | None = None,
) -> AuditReport:
    """The audit of one match as ``caller`` may read it: what ``matcha audit``, the
    API and the web page show."""
    at = now or datetime.now(UTC)
    rows, inputs = await _read(conn, match_id, evidence, receipts)
    report = build_report(match_id, rows, inputs, gap_threshold_s=gap_threshold_s, now=at)
    if caller.admin:  # a player sees nothing of the fair-play flags (docs/fairplay.md)
        report = replace(report, flags=await run_async(conn, flags_naming(match_id)))
    return seen_report(report, rows, caller, at)


__all__ = ["AuditInputs", "audit_match", "audit_seen_by", "build_report"]
