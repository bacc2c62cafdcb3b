"""Disputes, audits, admin decisions and the audit trail (docs/audit.md).

Who may do what:

* a player of a finished match files a dispute and sees their own disputes;
* an admin sees every dispute, audits any match, decides disputes, annuls;
* an organiser (or an admin) reads the audit trail of admin actions.

Disputes, decisions and annulments are commands of the match core
(``service.matches.disputes``: ``file_dispute``, ``decide_dispute``, ``annul``): the engine decides
each (the dispute window, one pending dispute per player, a decision once, an
annulment once), and this module only adapts HTTP to them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated

import msgspec
from litestar import Litestar, get, post
from litestar.datastructures import State
from litestar.params import QueryParameter
from psycopg_pool import AsyncConnectionPool

from schemas.events import DisputeFiled, MatchAnnulled
from schemas.receipts import Receipt, ReceiptsBody
from service.accounts.guards import requires_role
from service.accounts.players import Player, caller_of
from service.audit.audit import audit_seen_by
from service.audit.disputes import disputes_seen_by
from service.audit.report import AuditReport, DisputeState
from service.audit.timing import DEFAULT_GAP_S
from service.audit.trail import AdminAction, admin_actions, parse_filters
from service.broker.jobs import enqueue_ladder_update, redis_client
from service.evidence.service import Evidence
from service.matches import Accepted, MatchCore, disputes
from service.settings import Settings
from service.store import EventStore

log = logging.getLogger("matcha.audit")


class DisputeBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    reason: str
    receipts: tuple[Receipt, ...] = ()
    """The service's receipts you hold for this match (what the web client keeps):
    the audit checks the log against each (docs/audit.md "Receipts")."""


class DecisionBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    upheld: bool
    reason: str


class AnnulBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    reason: str


class Annulled(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    version: int
    """The version of the ``match_annulled`` event."""


OnAnnulled = Callable[[str], Awaitable[None] | None]
"""``fn(ladder_id)`` after an annulment commits (``app.state.on_annulled``)."""


def _enqueue_ladder_update(app: Litestar) -> OnAnnulled:
    """``await fn(ladder_id)``: queue the workers' ratings recompute of a ladder on RQ.

    The workers' own after-commit hook may queue it too when it sees the
    ``match_annulled`` event; the job is idempotent, so the second run finds
    nothing new. Asking here as well means an upheld dispute never depends on
    which hooks happen to be registered.
    """
    settings: Settings = app.state.settings

    async def enqueue(ladder_id: str) -> None:
        if not settings.redis.url:
            log.warning("REDIS_URL is not set: ladder %s is recomputed by catch-up", ladder_id)
            return
        from anyio import to_thread

        def put() -> None:
            enqueue_ladder_update(
                ladder_id, redis=redis_client(settings.redis.url), prefix=settings.redis.prefix
            )

        await to_thread.run_sync(put)

    return enqueue


def on_startup(app: Litestar) -> None:
    """What an annulment asks for afterwards: the ladder's ratings recomputed."""
    app.state.on_annulled = _enqueue_ladder_update(app)


async def _after_annulment(state: State, accepted: Accepted) -> None:
    """An annulment takes the match out of its ladder's ratings: ask for a recompute."""
    ladder_id = accepted.facts.ladder_id
    if ladder_id is None or not any(isinstance(r.event, MatchAnnulled) for r in accepted.stored):
        return
    try:
        result = state.on_annulled(ladder_id)
        if inspect.isawaitable(result):
            await result
    except Exception:  # the annulment is committed; the recompute can be re-asked
        log.exception("could not enqueue the ratings recompute of ladder %s", ladder_id)


@post(
    "/api/matches/{match_id:str}/disputes",
    operation_id="fileDispute",
    tags=["disputes"],
    status_code=201,
)
async def file_dispute(
    match_id: str, data: DisputeBody, player: Player, matches: MatchCore
) -> DisputeState:
    """A player of a finished match disputes it (within the ladder's dispute window)."""
    accepted = await disputes.file_dispute(matches, match_id, player.id, data.reason, data.receipts)
    filed = next(r.event for r in accepted.stored if isinstance(r.event, DisputeFiled))
    found = disputes_seen_by(await matches.log(match_id), player_id=player.id, admin=False)
    return next(d for d in found if d.dispute_id == filed.dispute_id)


@get("/api/matches/{match_id:str}/disputes", operation_id="listDisputes", tags=["disputes"])
async def list_disputes(match_id: str, player: Player, matches: MatchCore) -> list[DisputeState]:
    """The match's disputes and their state: your own, or all of them for an admin."""
    rows = await matches.log(match_id)
    return disputes_seen_by(rows, player_id=player.id, admin=player.has("admin"))


@get(
    "/api/admin/matches/{match_id:str}/audit",
    operation_id="auditMatch",
    tags=["admin"],
    guards=[requires_role("admin")],
)
async def audit(
    match_id: str,
    pool: AsyncConnectionPool,
    player: Player,
    state: State,
    gap_s: Annotated[float, QueryParameter(gt=0)] = DEFAULT_GAP_S,
) -> AuditReport:
    """The audit of a match: log, chain, re-fold, fairness, signatures, the latest
    checkpoint, timing and verdict.

    While the match is played an admin reads it as a spectator would: every
    check runs over the whole log, but the report shows only the public log."""
    async with pool.connection() as conn:
        return await audit_seen_by(
            conn, match_id, caller_of(player), _evidence(state), gap_threshold_s=gap_s
        )


@post(
    "/api/admin/matches/{match_id:str}/audit",
    operation_id="auditMatchWithReceipts",
    tags=["admin"],
    guards=[requires_role("admin")],
    status_code=200,
)
async def audit_with_receipts(
    match_id: str,
    data: ReceiptsBody,
    pool: AsyncConnectionPool,
    player: Player,
    state: State,
    gap_s: Annotated[float, QueryParameter(gt=0)] = DEFAULT_GAP_S,
) -> AuditReport:
    """The audit of ``GET /api/admin/matches/{id}/audit``, also checked against the
    receipts a player presents (in a dispute)."""
    async with pool.connection() as conn:
        return await audit_seen_by(
            conn,
            match_id,
            caller_of(player),
            _evidence(state),
            receipts=data.receipts,
            gap_threshold_s=gap_s,
        )


def _evidence(state: State) -> Evidence | None:
    """The evidence this process holds (loaded at start by the evidence plug-in)."""
    evidence: Evidence | None = getattr(state, "evidence", None)
    return evidence


@post(
    "/api/admin/disputes/{dispute_id:str}/decision",
    operation_id="decideDispute",
    tags=["admin"],
    guards=[requires_role("admin")],
    status_code=200,
)
async def decide_dispute(
    dispute_id: str, data: DecisionBody, player: Player, matches: MatchCore, state: State
) -> DisputeState:
    """Uphold (the match is annulled, ratings recomputed) or reject, with a written reason."""
    accepted = await disputes.decide_dispute(
        matches, dispute_id, player.id, upheld=data.upheld, reason=data.reason
    )
    await _after_annulment(state, accepted)
    found = disputes_seen_by(
        await matches.log(accepted.facts.match_id), player_id=player.id, admin=True
    )
    return next(d for d in found if d.dispute_id == dispute_id)


@post(
    "/api/admin/matches/{match_id:str}/annul",
    operation_id="annulMatch",
    tags=["admin"],
    guards=[requires_role("admin")],
    status_code=200,
)
async def annul_match(
    match_id: str, data: AnnulBody, player: Player, matches: MatchCore, state: State
) -> Annulled:
    """Annul a match, during play or after its end, without a dispute (the reason is required)."""
    accepted = await disputes.annul(matches, match_id, player.id, data.reason)
    await _after_annulment(state, accepted)
    return Annulled(match_id=match_id, version=accepted.version)


@get(
    "/api/admin/actions",
    operation_id="listAdminActions",
    tags=["admin"],
    guards=[requires_role("organiser")],
)
async def list_admin_actions(
    store: EventStore,
    pool: AsyncConnectionPool,
    ladder: Annotated[str | None, QueryParameter()] = None,
    admin: Annotated[str | None, QueryParameter()] = None,
    kind: Annotated[str | None, QueryParameter()] = None,
    after: Annotated[str | None, QueryParameter()] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
) -> list[AdminAction]:
    """Every admin action across ladders (decisions, annulments), oldest first.

    ``after`` is the last ``position`` seen (to page on) or an ISO-8601 time.
    """
    filters = parse_filters(ladder, admin, kind, after)
    return await admin_actions(store, pool, filters, limit=limit)


ROUTES = [
    file_dispute,
    list_disputes,
    audit,
    audit_with_receipts,
    decide_dispute,
    annul_match,
    list_admin_actions,
]
