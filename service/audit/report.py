"""The audit report of one match, as data: what the API returns as JSON and
what ``matcha audit`` prints.

Every check names its *first* finding only (version, what is wrong, and the
logged and expected values), because everything after a first divergence is
noise: once the log and the engine disagree, they disagree forever.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeAlias

import msgspec

from schemas.clocks import Clocks
from schemas.fairplay import Flag
from service.audit.rows import RawRow

CheckStatus: TypeAlias = Literal["consistent", "inconsistent", "skipped", "pending"]
"""``skipped``: the check could not run (it says why); ``pending``: it can only
run once the match has ended (the fairness check of a live match)."""

MatchStatus: TypeAlias = Literal["live", "finished", "annulled", "empty"]


class LoggedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the omniscient log, as stored (``data`` is the raw jsonb)."""

    position: int
    version: int
    type: str
    actor: str | None
    recorded_at: datetime
    data: dict[str, Any]
    hash: str
    """The stored hash, hex."""
    hash_ok: bool
    """The stored hash equals the one recomputed from this row and its predecessor."""


class Finding(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The first thing a check found wrong."""

    version: int | None
    """The version of the event at fault (None: the match as a whole)."""
    event_type: str | None = None
    problem: str
    """One sentence, e.g. ``hand_dealt differs at hands[0][2]``."""
    path: str | None = None
    """Where inside the event the values differ (``outcomes[1].given``)."""
    logged: Any = None
    expected: Any = None

    @classmethod
    def at(
        cls,
        row: RawRow,
        *,
        problem: str,
        path: str | None = None,
        logged: Any = None,
        expected: Any = None,
    ) -> Finding:
        """A finding about one log row: its version and event type, and what is wrong there."""
        return cls(
            version=row.version,
            event_type=row.type,
            problem=problem,
            path=path,
            logged=logged,
            expected=expected,
        )


class ChainCheck(msgspec.Struct, frozen=True, kw_only=True):
    status: CheckStatus
    rows: int
    first_break: Finding | None = None


class RefoldCheck(msgspec.Struct, frozen=True, kw_only=True):
    status: CheckStatus
    seed_source: Literal["revealed", "stored"] | None
    """Which seed the engine dealt from. The seed itself is never in the report
    of a live match."""
    commands_replayed: int
    events_compared: int
    first_difference: Finding | None = None
    note: str | None = None


class FairnessCheck(msgspec.Struct, frozen=True, kw_only=True):
    status: CheckStatus
    commitment_ok: bool | None
    deals_checked: int
    first_bad_deal: Finding | None = None
    note: str | None = None


class AdminCheck(msgspec.Struct, frozen=True, kw_only=True):
    """Disputes, decisions and annulments tell a coherent story."""

    status: CheckStatus
    events: int
    first_problem: Finding | None = None


class MoveTime(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    seat: int
    move: str
    seconds: float
    """Since the event that put the move up to this seat."""


class SeatTime(msgspec.Struct, frozen=True, kw_only=True):
    seat: int
    player: str
    moves: int
    total_s: float
    mean_s: float
    max_s: float


class Gap(msgspec.Struct, frozen=True, kw_only=True):
    after_version: int
    version: int
    seconds: float


class Timing(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    moves: list[MoveTime]
    seats: list[SeatTime]
    gap_threshold_s: float
    long_gaps: list[Gap]
    disconnections: list[dict[str, Any]] | Literal["not recorded"]
    clocks: Clocks | None = None
    """A timed match's clocks at its last event (``service.engine.clock``, the one
    clock function the views and frames use too); None: untimed."""
    early_time_outs: list[int] = []
    """Versions of time-outs (or aborts) logged before the clock had run out."""


class DisputeState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    dispute_id: str
    match_id: str
    seat: int
    player: str
    reason: str
    filed_at: datetime
    filed_version: int
    state: Literal["filed", "upheld", "rejected"]
    decided_by: str | None = None
    decision_reason: str | None = None
    decided_at: datetime | None = None


class SignatureCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Every row is covered by a service signature: its own, or that of a later
    row of the same append through the hash chain (docs/audit.md)."""

    status: CheckStatus
    signed_rows: int = 0
    """Rows that carry a valid signature (the last row of each append)."""
    legacy_rows: int = 0
    """Rows written before the service signed anything (migration 0025)."""
    keys: list[str] = []
    """The key ids that signed this match."""
    first_unsigned: Finding | None = None
    note: str | None = None


class EvidenceCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The log against evidence kept outside the database: the latest signed
    checkpoint that holds this match, and any receipts presented."""

    status: CheckStatus
    checkpoint: int | None = None
    """The sequence number of the checkpoint checked against."""
    checkpoint_version: int | None = None
    """The match's version in that checkpoint."""
    receipts: int = 0
    """Receipts presented and checked."""
    first_problem: Finding | None = None
    note: str | None = None


CheckName: TypeAlias = Literal["chain", "refold", "fairness", "admin", "signatures", "evidence"]


class CheckLine(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One check as every reader shows it (``matcha audit``, the API, the web page):
    what it is, its status, what it covered, and its first problem."""

    name: CheckName
    title: str
    """For people: ``Hash chain``, ``Re-fold through the engine``, ..."""
    status: CheckStatus
    summary: str
    """What the check covered: ``42 events linked``, ``17 signatures``, ..."""
    first_problem: Finding | None = None
    note: str | None = None


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    consistent: bool
    line: str
    """``consistent`` or ``inconsistent: <why>``: the line a human reads first."""
    reasons: list[str]


class AuditReport(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    ladder_id: str | None
    players: list[str]
    status: MatchStatus
    audited_at: datetime
    events: list[LoggedEvent]
    chain: ChainCheck
    refold: RefoldCheck
    fairness: FairnessCheck
    admin: AdminCheck
    timing: Timing
    disputes: list[DisputeState]
    verdict: Verdict
    signatures: SignatureCheck = msgspec.field(
        default_factory=lambda: SignatureCheck(status="skipped", note="not checked")
    )
    evidence: EvidenceCheck = msgspec.field(
        default_factory=lambda: EvidenceCheck(status="skipped", note="not checked")
    )
    checks: list[CheckLine] = []
    """Every check above, in order, as one list: the verdict is made from it, and the
    CLI, the API and the web page each show all of it (``service.audit.verdict``)."""
    public_only: bool = False
    """The match is being played: ``events`` is the public log (as a live spectator
    sees it) and no finding quotes the values it compared; the checks themselves
    ran over the whole log (docs/audit.md, "Who reads what")."""
    flags: list[Flag] = []
    """The fair-play flags that name this match (admins only; docs/fairplay.md)."""


_encoder = msgspec.json.Encoder()


def to_json(report: AuditReport) -> bytes:
    return _encoder.encode(report)


def from_json(data: bytes | str) -> AuditReport:
    return msgspec.json.decode(data, type=AuditReport)
