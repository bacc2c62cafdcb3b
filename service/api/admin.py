"""Disputes, audits, admin decisions and the audit trail (docs/audit.md).

Who may do what:

* a player of a finished match files a dispute and sees their own disputes;
* an admin sees every dispute, audits any match, decides disputes, annuls;
* an organiser (or an admin) reads the audit trail of admin actions.

Mounted through ``service.api.app.ROUTES``; ``on_startup`` (in ``ON_STARTUP``)
puts the ``DisputeService`` on ``app.state.disputes``.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import msgspec
from litestar import Litestar, get, post
from litestar.datastructures import State
from litestar.params import QueryParameter
from psycopg_pool import AsyncConnectionPool

from service.api.auth import Player
from service.api.deps import requires_role
from service.audit.audit import audit_match
from service.audit.disputes import DisputeService
from service.audit.report import AuditReport, DisputeState
from service.audit.timing import DEFAULT_GAP_S
from service.audit.trail import AdminAction, admin_actions, parse_filters
from service.store import EventStore

log = logging.getLogger("matcha.audit")


class DisputeBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    reason: str


class DecisionBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    upheld: bool
    reason: str


class AnnulBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    reason: str


class Annulled(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    version: int
    """The version of the ``match_annulled`` event."""


def _enqueue_ladder_update(app: Litestar) -> Any:
    """``await fn(ladder_id)``: queue the workers' ratings recompute on RQ.

    The workers' own after-commit hook may queue it too when it sees the
    ``match_annulled`` event; the job is idempotent, so the second run finds
    nothing new. Asking here as well means an upheld dispute never depends on
    which hooks happen to be registered.
    """
    settings = app.state.settings

    async def enqueue(ladder_id: str) -> None:
        if not settings.redis.url:
            log.warning("REDIS_URL is not set: ladder %s is recomputed by catch-up", ladder_id)
            return
        from anyio import to_thread

        from workers.queue import enqueue_ladder_update, redis_client

        def put() -> None:
            enqueue_ladder_update(
                ladder_id, redis=redis_client(settings.redis.url), prefix=settings.redis.prefix
            )

        await to_thread.run_sync(put)

    return enqueue


def on_startup(app: Litestar) -> None:
    """Put the dispute service on ``app.state`` (sharing the match service's hooks)."""
    matches = getattr(app.state, "matches", None)
    app.state.disputes = DisputeService(
        app.state.pool,
        app.state.store,
        after_commit=matches.after_commit if matches is not None else [],
        on_annulled=_enqueue_ladder_update(app),
    )


def _disputes(state: State) -> DisputeService:
    service: DisputeService = state.disputes
    return service


@post(
    "/api/matches/{match_id:str}/disputes",
    operation_id="fileDispute",
    tags=["disputes"],
    status_code=201,
)
async def file_dispute(
    match_id: str, data: DisputeBody, player: Player, state: State
) -> DisputeState:
    """A player of a finished match disputes it (within the ladder's dispute window)."""
    return await _disputes(state).file(match_id, player, data.reason)


@get("/api/matches/{match_id:str}/disputes", operation_id="listDisputes", tags=["disputes"])
async def list_disputes(match_id: str, player: Player, state: State) -> list[DisputeState]:
    """The match's disputes and their state: your own, or all of them for an admin."""
    return await _disputes(state).disputes(match_id, player)


@get(
    "/api/admin/matches/{match_id:str}/audit",
    operation_id="auditMatch",
    tags=["admin"],
    guards=[requires_role("admin")],
)
async def audit(
    match_id: str,
    pool: AsyncConnectionPool,
    state: State,
    gap_s: Annotated[float, QueryParameter(gt=0)] = DEFAULT_GAP_S,
) -> AuditReport:
    """The full audit of a match: log, chain, re-fold, fairness, signatures, the
    latest checkpoint, timing and verdict."""
    evidence = getattr(state, "evidence", None)
    async with pool.connection() as conn:
        return await audit_match(
            conn,
            match_id,
            gap_threshold_s=gap_s,
            keyring=None if evidence is None else evidence.keyring,
            checkpoints=None if evidence is None else evidence.checkpoints,
        )


@post(
    "/api/admin/disputes/{dispute_id:str}/decision",
    operation_id="decideDispute",
    tags=["admin"],
    guards=[requires_role("admin")],
    status_code=200,
)
async def decide_dispute(
    dispute_id: str, data: DecisionBody, player: Player, state: State
) -> DisputeState:
    """Uphold (the match is annulled, ratings recomputed) or reject, with a written reason."""
    return await _disputes(state).decide(dispute_id, player, data.upheld, data.reason)


@post(
    "/api/admin/matches/{match_id:str}/annul",
    operation_id="annulMatch",
    tags=["admin"],
    guards=[requires_role("admin")],
    status_code=200,
)
async def annul_match(match_id: str, data: AnnulBody, player: Player, state: State) -> Annulled:
    """Annul a match without a dispute (the reason is required)."""
    version = await _disputes(state).annul(match_id, player, data.reason)
    return Annulled(match_id=match_id, version=version)


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


ROUTES = [file_dispute, list_disputes, audit, decide_dispute, annul_match, list_admin_actions]
