"""The verdict: every check as one list, and the one line made from it.

The CLI, the API and the web page show the same ``checks`` and the same
``Verdict``: a match is consistent only when no check is inconsistent (and the
re-fold could run). A check that was skipped says why in its note and in the
verdict line, so a verdict never looks like more than it checked.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.audit.report import (
    AdminCheck,
    ChainCheck,
    CheckLine,
    EvidenceCheck,
    FairnessCheck,
    Finding,
    RefoldCheck,
    SignatureCheck,
    Verdict,
)


def check_lines(
    chain: ChainCheck,
    refold: RefoldCheck,
    fairness: FairnessCheck,
    admin: AdminCheck,
    signatures: SignatureCheck,
    evidence: EvidenceCheck,
) -> list[CheckLine]:
    """Each check, in the order a reader goes through them."""
    commitment = (
        "; the seed does not match its commitment" if fairness.commitment_ok is False else ""
    )
    held = (
        f"checkpoint {evidence.checkpoint} holds version {evidence.checkpoint_version}"
        if evidence.checkpoint is not None
        else "no checkpoint"
    )
    seed = f", {refold.seed_source} seed" if refold.seed_source else ""
    return [
        CheckLine(
            name="chain",
            title="Hash chain",
            status=chain.status,
            summary=f"{chain.rows} events linked",
            first_problem=chain.first_break,
        ),
        CheckLine(
            name="refold",
            title="Re-fold through the engine",
            status=refold.status,
            summary=f"{refold.events_compared} events compared, "
            f"{refold.commands_replayed} moves replayed{seed}",
            first_problem=refold.first_difference,
            note=refold.note,
        ),
        CheckLine(
            name="fairness",
            title="Fair dealing",
            status=fairness.status,
            summary=f"{fairness.deals_checked} deals checked against the seed{commitment}",
            first_problem=fairness.first_bad_deal,
            note=fairness.note,
        ),
        CheckLine(
            name="admin",
            title="Disputes and decisions",
            status=admin.status,
            summary=f"{admin.events} admin events",
            first_problem=admin.first_problem,
        ),
        CheckLine(
            name="signatures",
            title="Service signatures",
            status=signatures.status,
            summary=f"{signatures.signed_rows} signatures"
            + (f" by {', '.join(signatures.keys)}" if signatures.keys else "")
            + (
                f", {signatures.legacy_rows} rows from before signing"
                if signatures.legacy_rows
                else ""
            ),
            first_problem=signatures.first_unsigned,
            note=signatures.note,
        ),
        CheckLine(
            name="evidence",
            title="Checkpoint and receipts",
            status=evidence.status,
            summary=f"{held}, {evidence.receipts} receipts",
            first_problem=evidence.first_problem,
            note=evidence.note,
        ),
    ]


_REASON = {
    "chain": "chain broken at version {v}: {p}",
    "refold": "re-fold differs at version {v}: {p}",
    "fairness": "unfair at version {v}: {p}",
    "admin": "admin events wrong at version {v}: {p}",
    "signatures": "unsigned at version {v}: {p}",
    "evidence": "evidence contradicts the log at version {v}: {p}",
}


def _reason(line: CheckLine) -> str | None:
    """Why ``line`` makes the match inconsistent (None: it does not)."""
    if line.name == "refold" and line.status == "skipped":
        return f"re-fold not possible: {line.note}"
    if line.status != "inconsistent":
        return None
    found: Finding | None = line.first_problem
    if found is None:
        return f"{line.title.lower()}: {line.note or 'inconsistent'}"
    if found.version is None:
        return f"{line.name}: {found.problem}"
    return _REASON[line.name].format(v=found.version, p=found.problem)


def verdict(lines: Sequence[CheckLine]) -> Verdict:
    """Consistent when no check says otherwise; the line names what was not checked."""
    reasons = [r for r in (_reason(line) for line in lines) if r is not None]
    if reasons:
        return Verdict(
            consistent=False, line="inconsistent: " + "; ".join(reasons), reasons=reasons
        )
    shown = [f"{line.title.lower()} {line.status} ({line.summary})" for line in lines]
    skipped = [line.title.lower() for line in lines if line.status == "skipped"]
    line = "consistent: " + ", ".join(shown)
    if skipped:
        line += "; not checked: " + ", ".join(skipped) + " (see their notes)"
    return Verdict(consistent=True, line=line, reasons=[])


__all__ = ["check_lines", "verdict"]
