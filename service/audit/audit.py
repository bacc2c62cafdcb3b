"""Audit one match: read its raw rows, run every check, build the report.

``build_report`` is pure (rows and the stored seed in, report out) so the
checks can be tested without a database; ``audit_match`` reads the rows and
the seed with SQL and calls it. The API endpoint and ``matcha audit`` both
call ``audit_seen_by``, so they print the same report: ``audit_match``'s
whole report once the match is over, and while it is played the public one
the viewer policy allows (``public_report``: every check still runs over the
whole log, but no hidden card is shown).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace

from schemas.events import MatchCreated, decode_event
from schemas.rules import DEFAULT_TERMS, MatchTerms
from service.audit.admin_events import admin_check, disputes
from service.audit.chain_check import chain_check, hash_flags
from service.audit.fairness import fairness, revealed_seed
from service.audit.refold import Engine, SeedSource, decode, refold
from service.audit.report import AuditReport, Finding, LoggedEvent, MatchStatus, Verdict
from service.audit.rows import RawRow, match_rows
from service.audit.timing import DEFAULT_GAP_S, timing
from service.engine import dealing, redact
from service.errors import NotFound
from service.matches.facts import MatchFacts
from service.matches.policy import Caller, Seen, seen_by

if TYPE_CHECKING:
    from service.evidence.checkpoints import CheckpointLog, InclusionProof
    from service.evidence.keys import Keyring
    from service.evidence.receipts import Receipt

HIDDEN = "<hidden until the match ends>"


def _status(rows: Sequence[RawRow]) -> MatchStatus:
    types = {r.type for r in rows}
    if not rows:
        return "empty"
    if "match_annulled" in types:
        return "annulled"
    return "finished" if "match_ended" in types else "live"


def _created(rows: Sequence[RawRow]) -> MatchCreated | None:
    for row in rows:
        if row.type == "match_created":
            event = decode(row)
            return event if isinstance(event, MatchCreated) else None
    return None


def _fits(seed: str | None, created: MatchCreated | None) -> bool:
    """``seed`` is the one the match committed to, under the match's own scheme."""
    return (
        seed is not None
        and created is not None
        and dealing.valid_seed(seed)
        and dealing.expected_commitment(created, seed) == created.seed_commitment
    )


def _scrubber(secret: str | None) -> Any:
    """A function that replaces ``secret`` wherever it appears in a JSON value."""

    def scrub(value: Any) -> Any:
        if secret is None:
            return value
        if isinstance(value, str):
            return value.replace(secret, HIDDEN)
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [scrub(v) for v in value]
        return value

    return scrub


def build_report(
    match_id: str,
    rows: Sequence[RawRow],
    *,
    stored_seed: str | None = None,
    gap_threshold_s: float = DEFAULT_GAP_S,
    now: datetime | None = None,
    engine: Engine | None = None,
    keyring: Keyring | None = None,
    unsigned_up_to: int = 0,
    checkpoint: InclusionProof | None = None,
    receipts: Sequence[Receipt] = (),
    checkpoint_note: str | None = None,
    seed_reused_by: str | None = None,
) -> AuditReport:
    """The whole audit of one match from its raw rows (version order).

    ``stored_seed`` is the secret seed kept beside the log (admins only): it
    lets a live match be re-folded, and names the fault when a finished
    match's revealed seed was forged. It never appears in the report unless
    the log itself revealed it.
    """
    rows = sorted(rows, key=lambda r: (r.version, r.position))
    created = next((r.data for r in rows if r.type == "match_created"), {})
    players = [str(p) for p in created.get("players") or []]
    status = _status(rows)
    created_event = _created(rows)
    revealed, _ = revealed_seed(rows)
    ended = revealed is not None or any(r.type == "match_ended" for r in rows)

    seed: str | None = None
    source: SeedSource | None = None
    if _fits(revealed, created_event):
        seed, source = revealed, "revealed"
    elif _fits(stored_seed, created_event):
        seed, source = stored_seed, "stored"
    # The stored seed is secret unless the log revealed that very seed.
    secret = stored_seed if stored_seed is not None and stored_seed != revealed else None
    scrub = _scrubber(secret)

    chain = chain_check(rows)
    flags = hash_flags(rows, chain_intact=chain.status == "consistent")
    events = [
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
    refolded = refold(rows, seed, source, engine, hide=scrub, live=not ended)
    fair = fairness(rows, revealed if ended else stored_seed, live=not ended)
    if fair.first_bad_deal is not None:
        bad = fair.first_bad_deal
        fair = replace(
            fair,
            first_bad_deal=replace(bad, logged=scrub(bad.logged), expected=scrub(bad.expected)),
        )
    if seed_reused_by is not None and fair.first_bad_deal is None and rows:
        fair = replace(
            fair,
            status="inconsistent",
            first_bad_deal=Finding.at(
                rows[0],
                problem=f"the seed of this match is also the seed of match {seed_reused_by}: "
                "a reused seed, whose deals whoever saw the other match can compute",
            ),
        )
    admin = admin_check(rows)
    timed = timing(rows, players, gap_threshold_s=gap_threshold_s)
    from service.evidence.audit_checks import evidence_check, signature_check
    from service.store.heads import head_salt

    # Signatures sign each head blinded with the salt of the match's seed: the
    # seed the log reveals, or the one stored beside it (its value never shows).
    salt = head_salt(seed if seed is not None else (revealed or stored_seed))
    signed = signature_check(rows, keyring, salt, unsigned_up_to=unsigned_up_to)
    held = evidence_check(
        rows, keyring, salt, proof=checkpoint, receipts=receipts, checkpoint_note=checkpoint_note
    )

    reasons: list[str] = []
    if chain.first_break is not None:
        reasons.append(
            f"chain broken at version {chain.first_break.version}: {chain.first_break.problem}"
        )
    if refolded.status == "inconsistent" and refolded.first_difference is not None:
        d = refolded.first_difference
        reasons.append(f"re-fold differs at version {d.version}: {d.problem}")
    elif refolded.status == "skipped":
        reasons.append(f"re-fold not possible: {refolded.note}")
    if fair.status == "inconsistent" and fair.first_bad_deal is not None:
        f = fair.first_bad_deal
        reasons.append(f"unfair at version {f.version}: {f.problem}")
    elif fair.status == "inconsistent":
        reasons.append(f"fairness: {fair.note}")
    if admin.first_problem is not None:
        reasons.append(
            f"admin events wrong at version {admin.first_problem.version}: "
            f"{admin.first_problem.problem}"
        )
    if signed.first_unsigned is not None:
        reasons.append(
            f"unsigned at version {signed.first_unsigned.version}: {signed.first_unsigned.problem}"
        )
    if held.first_problem is not None:
        where = held.first_problem.version
        reasons.append(
            (f"evidence contradicts the log at version {where}: " if where else "evidence: ")
            + held.first_problem.problem
        )
    if reasons:
        verdict = Verdict(
            consistent=False, line="inconsistent: " + "; ".join(reasons), reasons=reasons
        )
    else:
        line = (
            f"consistent: chain intact ({chain.rows} rows), re-fold matches "
            f"({refolded.events_compared} events from {refolded.commands_replayed} moves, "
            f"{source} seed)"
        )
        line += (
            f", seed fair ({fair.deals_checked} deals)"
            if fair.status == "consistent" and not fair.note
            else f", fairness {fair.status} ({fair.note})"
        )
        if signed.status == "consistent":
            line += f", signed ({signed.signed_rows} signatures)"
        if held.checkpoint is not None:
            line += f", checkpoint {held.checkpoint} holds version {held.checkpoint_version}"
        if held.receipts:
            line += f", {held.receipts} receipts match"
        verdict = Verdict(consistent=True, line=line, reasons=[])

    return AuditReport(
        match_id=match_id,
        ladder_id=created.get("ladder_id"),
        players=players,
        status=status,
        audited_at=now or datetime.now(UTC),
        events=events,
        chain=chain,
        refold=refolded,
        fairness=fair,
        admin=admin,
        timing=timed,
        disputes=disputes(rows),
        verdict=verdict,
        signatures=signed,
        evidence=held,
    )


async def load_stored_seed(conn: Any, match_id: str) -> str | None:
    cur = await conn.execute("SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,))
    row = await cur.fetchone()
    return row[0] if row else None


REUSED_SEED = """
SELECT match_id FROM match_seeds WHERE seed = %(seed)s AND match_id <> %(match)s
UNION ALL
SELECT match_id FROM events
WHERE type = 'match_ended' AND data ->> 'seed' = %(seed)s AND match_id <> %(match)s
LIMIT 1
"""


async def seed_reused_by(conn: Any, match_id: str, seed: str | None) -> str | None:
    """Another match that was dealt from (or revealed) the same seed, if any."""
    if seed is None:
        return None
    cur = await conn.execute(REUSED_SEED, {"seed": seed, "match": match_id})
    row = await cur.fetchone()
    return None if row is None else str(row[0])


def presented_in_disputes(rows: Sequence[RawRow]) -> list[Receipt]:
    """The receipts the players presented with their disputes: every audit checks them."""
    from service.evidence.receipts import Receipt

    found: list[Receipt] = []
    for row in rows:
        if row.type == "dispute_filed":
            try:
                found += msgspec.convert(row.data.get("receipts") or [], list[Receipt])
            except msgspec.ValidationError:
                continue  # a forged row: the chain and signature checks name it
    return found


async def audit_match(
    conn: Any,
    match_id: str,
    *,
    use_stored_seed: bool = True,
    gap_threshold_s: float = DEFAULT_GAP_S,
    keyring: Keyring | None = None,
    checkpoints: CheckpointLog | None = None,
    receipts: Sequence[Receipt] = (),
) -> AuditReport:
    """Audit one match read from ``conn`` (a psycopg ``AsyncConnection``).

    ``keyring`` / ``checkpoints``: the service's public keys and checkpoint
    log; None takes them from the environment when it names them
    (``service.evidence.config``), else those checks are skipped.
    """
    from service.evidence.service import default_evidence
    from service.store.events import unsigned_up_to

    rows = await match_rows(conn, match_id)
    if not rows:
        raise NotFound(f"There is no match {match_id!r}.", code="match_not_found")
    stored = await load_stored_seed(conn, match_id) if use_stored_seed else None
    if keyring is None or checkpoints is None:
        found = default_evidence()
        if found is not None:
            keyring = keyring or found.keyring
            checkpoints = checkpoints or await found.bind(conn)
    proof, note = None, None
    if checkpoints is not None:
        checkpoints.refresh()
        proof = checkpoints.proof(match_id)
        if proof is None:
            note = (
                "no checkpoint holds this match yet"
                if checkpoints.latest is not None
                else f"no checkpoint in {checkpoints.path}"
            )
    return build_report(
        match_id,
        rows,
        stored_seed=stored,
        gap_threshold_s=gap_threshold_s,
        keyring=keyring,
        unsigned_up_to=await unsigned_up_to(conn) if keyring is not None else 0,
        checkpoint=proof,
        receipts=[*receipts, *presented_in_disputes(rows)],
        checkpoint_note=note,
        seed_reused_by=await seed_reused_by(conn, match_id, stored or revealed_seed(rows)[0]),
    )


def _public_data(row: RawRow) -> dict[str, Any]:
    """A row's event as a live spectator sees it (or only its type, if it is not an event)."""
    try:
        event = decode_event(msgspec.json.encode(row.data))
    except msgspec.DecodeError:
        return {"type": row.type, "withheld": "not a valid event"}
    shown = redact(event, "spectator", match_over=False)
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(shown))
    return decoded


def _terms(rows: Sequence[RawRow]) -> MatchTerms:
    created = next((r for r in rows if r.type == "match_created"), None)
    raw = None if created is None else created.data.get("terms")
    try:
        return msgspec.convert(raw, MatchTerms) if raw is not None else DEFAULT_TERMS
    except msgspec.ValidationError:
        return DEFAULT_TERMS


def _blind(finding: Finding | None) -> Finding | None:
    """A finding without the values it compared (they may be hidden cards)."""
    return None if finding is None else replace(finding, logged=None, expected=None)


def public_report(
    report: AuditReport, rows: Sequence[RawRow], released: Callable[[RawRow], bool]
) -> AuditReport:
    """The audit of a live match as the viewer policy lets an administrator read it:
    every check runs over the whole log (the chain, the re-fold with the stored
    seed, the admin events), but the report shows only the public log, as a live
    spectator sees it (``released`` rows only, under the match's spectator delay),
    and no finding quotes a value it compared."""
    by_version = {r.version: r for r in rows}
    return replace(
        report,
        events=[
            replace(e, data=_public_data(by_version[e.version]))
            for e in report.events
            if e.version in by_version and released(by_version[e.version])
        ],
        refold=replace(report.refold, first_difference=_blind(report.refold.first_difference)),
        fairness=replace(report.fairness, first_bad_deal=_blind(report.fairness.first_bad_deal)),
        chain=replace(report.chain, first_break=_blind(report.chain.first_break)),
        admin=replace(report.admin, first_problem=_blind(report.admin.first_problem)),
        signatures=replace(
            report.signatures, first_unsigned=_blind(report.signatures.first_unsigned)
        ),
        evidence=replace(report.evidence, first_problem=_blind(report.evidence.first_problem)),
        public_only=True,
    )


async def audit_seen_by(
    conn: Any,
    match_id: str,
    caller: Caller,
    *,
    gap_threshold_s: float = DEFAULT_GAP_S,
    now: datetime | None = None,
    keyring: Keyring | None = None,
    checkpoints: CheckpointLog | None = None,
    receipts: Sequence[Receipt] = (),
) -> AuditReport:
    """The audit as ``caller`` (an administrator) may read it: the whole report once
    the match is over, the public one while it is played (``service.matches.policy``)."""
    report = await audit_match(
        conn,
        match_id,
        gap_threshold_s=gap_threshold_s,
        keyring=keyring,
        checkpoints=checkpoints,
        receipts=receipts,
    )
    rows = await match_rows(conn, match_id)
    created = next((r for r in rows if r.type == "match_created"), None)
    try:
        first = None if created is None else decode_event(msgspec.json.encode(created.data))
    except msgspec.DecodeError:
        first = None
    over = report.status in ("finished", "annulled")
    if isinstance(first, MatchCreated):
        facts = MatchFacts(created=first, terms=first.terms or _terms(rows))
        seen = seen_by(facts, caller, over=over, channel="audit")
    else:  # no readable creation: nothing to judge the viewer by, so the public report
        seen = Seen(viewer="spectator", hide=True, delay_s=0.0, seat=None)
    if seen.viewer == "omniscient":
        return report
    at = now or datetime.now(UTC)
    return public_report(report, rows, lambda r: r.version == 1 or seen.released(r.recorded_at, at))
