"""The audit as the viewer policy lets its reader see it (``service.matches.policy``).

Every check always runs over the whole log. Once the match is over an
administrator reads the whole report; while it is played the policy makes the
administrator a spectator, so the report shows the public log only, each event
as that spectator sees it (``redact`` with the policy's viewer), released under
the match's spectator delay, and no finding quotes a value it compared (it may
be a hidden card). Nothing here picks a viewer: ``seen_by`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
from msgspec.structs import replace

from schemas.events import decode_event
from schemas.rules import DEFAULT_TERMS
from service.audit.report import AuditReport, Finding
from service.audit.rows import RawRow
from service.audit.seeds import created_event
from service.engine import redact
from service.matches.facts import MatchFacts
from service.matches.policy import Caller, Seen, public_sight, seen_by


def sight(report: AuditReport, rows: Sequence[RawRow], caller: Caller) -> Seen:
    """What the policy lets ``caller`` see of this match (a log whose creation cannot
    be read has no players to judge by: the policy's answer for that)."""
    over = report.status in ("finished", "annulled")
    created = created_event(rows)
    if created is None:
        return public_sight(None, over=over)
    # A match created before terms were copied into it: the default terms (its
    # ladder's row is not the audit's to read).
    facts = MatchFacts(created=created, terms=created.terms or DEFAULT_TERMS)
    return seen_by(facts, caller, over=over, channel="audit")


def _shown(row: RawRow, seen: Seen) -> dict[str, Any]:
    """A row's event as the policy's viewer sees it during play (only its type, if
    it is not an event)."""
    try:
        event = decode_event(msgspec.json.encode(row.data))
    except msgspec.DecodeError:
        return {"type": row.type, "withheld": "not a valid event"}
    shown = redact(event, seen.viewer, match_over=False, hide_hands_in_replay=seen.hide)
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(shown))
    return decoded


def _blind(finding: Finding | None) -> Finding | None:
    """A finding without the values it compared (they may be hidden cards)."""
    return None if finding is None else replace(finding, logged=None, expected=None)


def seen_report(
    report: AuditReport, rows: Sequence[RawRow], caller: Caller, now: datetime
) -> AuditReport:
    """``report`` as ``caller`` may read it at ``now``."""
    seen = sight(report, rows, caller)
    if seen.viewer == "omniscient":
        return report
    by_version = {r.version: r for r in rows}

    def released(row: RawRow) -> bool:
        return row.version == 1 or seen.released(row.recorded_at, now)

    return replace(
        report,
        events=[
            replace(e, data=_shown(by_version[e.version], seen))
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
        checks=[replace(c, first_problem=_blind(c.first_problem)) for c in report.checks],
        public_only=True,
    )


__all__ = ["seen_report", "sight"]
