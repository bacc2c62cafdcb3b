"""``GET /api/admin/disputes``: every dispute across matches, for the admins' queue.

Read-only, admins only. A dispute's state is read from the match logs the
same way the audit reads it (``service.audit.admin_events.disputes``): the
``dispute_filed`` and ``dispute_decided`` events, found through the events
table's (type, position) index. Players, admins and ladders come with their
names, so the page never shows a bare id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import get
from litestar.params import Parameter, QueryParameter
from psycopg_pool import AsyncConnectionPool

from service.accounts.guards import requires_role
from service.audit.admin_events import disputes as dispute_states
from service.audit.rows import RawRow
from service.store import matchlog
from service.store.ops import run_async

StateFilter = Literal["filed", "upheld", "rejected", "all"]


class QueuedDispute(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    dispute_id: str
    match_id: str
    ladder_id: str | None
    ladder_name: str | None
    players: tuple[str, str]
    player_names: tuple[str | None, str | None]
    seat: int
    """The filing seat."""
    filer: str
    filer_name: str | None
    reason: str
    filed_at: datetime
    state: Literal["filed", "upheld", "rejected"]
    match_status: str | None
    """From the match list: finished, annulled."""
    decided_by: str | None = None
    decided_by_name: str | None = None
    decision_reason: str | None = None
    decided_at: datetime | None = None


DISPUTE_TYPES = ("dispute_filed", "dispute_decided")


def _raw_row(row: matchlog.LogRow) -> RawRow:
    return RawRow(
        position=row.position,
        match_id=row.match_id,
        version=row.version,
        type=row.type,
        data=msgspec.json.decode(row.data),
        actor=row.actor,
        recorded_at=row.recorded_at,
        prev_hash=b"",  # not needed to read a dispute's state
        hash=b"",
    )


@get(
    "/api/admin/disputes",
    operation_id="listDisputeQueue",
    tags=["admin"],
    guards=[requires_role("admin")],
)
async def dispute_queue(
    pool: AsyncConnectionPool,
    wanted: Annotated[
        StateFilter, QueryParameter(name="state", description="Which disputes")
    ] = "filed",
    limit: Annotated[int, Parameter(ge=1, le=500)] = 100,
) -> list[QueuedDispute]:
    """Disputes waiting for a decision (``?state=filed``, oldest first), or decided
    ones (``upheld``, ``rejected``, ``all``: newest first), with names."""
    async with pool.connection() as conn:
        by_match: dict[str, list[RawRow]] = {}
        for logged in await run_async(conn, matchlog.rows_of_types(DISPUTE_TYPES)):
            row = _raw_row(logged)
            by_match.setdefault(row.match_id, []).append(row)
        found = [d for rows in by_match.values() for d in dispute_states(rows)]
        if wanted != "all":
            found = [d for d in found if d.state == wanted]
        found.sort(key=lambda d: d.filed_at, reverse=wanted != "filed")
        found = found[:limit]
        matches = list({d.match_id for d in found})
        cur = await conn.execute(
            """SELECT s.match_id, s.ladder_id, l.name, s.player0, s.player1, s.status
                 FROM match_summaries s LEFT JOIN ladders l ON l.id = s.ladder_id
                WHERE s.match_id = ANY(%s)""",
            (matches,),
        )
        summaries: dict[str, tuple[Any, ...]] = {r[0]: r for r in await cur.fetchall()}
        ids = {d.player for d in found} | {d.decided_by for d in found if d.decided_by}
        ids |= {p for s in summaries.values() for p in (s[3], s[4])}
        cur = await conn.execute("SELECT id, name FROM players WHERE id = ANY(%s)", (list(ids),))
        names: dict[str, str] = dict(await cur.fetchall())
    out = []
    for d in found:
        s = summaries.get(d.match_id)
        players = (s[3], s[4]) if s else ("", "")
        out.append(
            QueuedDispute(
                dispute_id=d.dispute_id,
                match_id=d.match_id,
                ladder_id=s[1] if s else None,
                ladder_name=s[2] if s else None,
                players=players,
                player_names=(names.get(players[0]), names.get(players[1])),
                seat=d.seat,
                filer=d.player,
                filer_name=names.get(d.player),
                reason=d.reason,
                filed_at=d.filed_at,
                state=d.state,
                match_status=s[5] if s else None,
                decided_by=d.decided_by,
                decided_by_name=names.get(d.decided_by) if d.decided_by else None,
                decision_reason=d.decision_reason,
                decided_at=d.decided_at,
            )
        )
    return out


ROUTES = [dispute_queue]
"""Mounted through ``service.app.ROUTES``."""
