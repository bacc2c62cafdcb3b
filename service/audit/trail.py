"""The audit trail: every admin action across ladders, read from the log.

An admin action is an event (``DisputeDecided``, ``MatchAnnulled``) in the
match's own log, so the trail is a read of the events table by type through
``EventStore.read_all``, in committed order; nothing else records it, so
nothing else can disagree with it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypeAlias

import msgspec
from psycopg.errors import UndefinedTable
from psycopg_pool import AsyncConnectionPool

from schemas.events import DisputeDecided, MatchAnnulled
from service.errors import ValidationFailed
from service.store import EventStore, matchlog
from service.store.ops import run_async

ActionKind: TypeAlias = Literal["dispute_decided", "match_annulled"]
KINDS: tuple[ActionKind, ...] = ("dispute_decided", "match_annulled")
PAGE = 500


class AdminAction(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    position: int
    """Global log position: pass the last one as ``after`` to read on."""
    recorded_at: datetime
    kind: ActionKind
    match_id: str
    version: int
    ladder_id: str | None
    admin: str
    admin_name: str | None = None
    reason: str
    dispute_id: str | None = None
    upheld: bool | None = None


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    ladder: str | None = None
    admin: str | None = None
    kind: ActionKind | None = None
    after_position: int = 0
    after_time: datetime | None = None


def parse_filters(
    ladder: str | None, admin: str | None, kind: str | None, after: str | None
) -> Filters:
    """``after`` is a log position (a whole number) or an ISO-8601 instant."""
    if kind is not None and kind not in KINDS:
        raise ValidationFailed(f"kind must be one of {', '.join(KINDS)}.")
    position, when = 0, None
    if after:
        if after.isdigit():
            position = int(after)
        else:
            try:
                when = datetime.fromisoformat(after.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValidationFailed("after must be a log position or an ISO-8601 time.") from exc
            if when.tzinfo is None:
                raise ValidationFailed("after must name its time zone (e.g. ...Z).")
    return Filters(
        ladder=ladder or None,
        admin=admin or None,
        kind=kind,
        after_position=position,
        after_time=when,
    )


async def _ladders_and_names(
    pool: AsyncConnectionPool, match_ids: set[str], admins: set[str]
) -> tuple[dict[str, str | None], dict[str, str]]:
    async with pool.connection() as conn:
        ladders = await run_async(conn, matchlog.ladders_of(list(match_ids)))
        try:
            cur = await conn.execute(
                "SELECT id, name FROM players WHERE id = ANY(%s)", (list(admins),)
            )
            names = {i: n for i, n in await cur.fetchall()}
        except UndefinedTable:  # a bare event store without accounts: ids only
            names = {}
    return ladders, names


async def admin_actions(
    store: EventStore, pool: AsyncConnectionPool, filters: Filters, *, limit: int = 100
) -> list[AdminAction]:
    """Admin actions matching ``filters``, oldest first, at most ``limit``."""
    types = [filters.kind] if filters.kind else list(KINDS)
    out: list[AdminAction] = []
    after = filters.after_position
    while len(out) < limit:
        page = await store.read_all(after_position=after, limit=PAGE, types=types)
        if not page:
            break
        after = page[-1].position
        ladders, names = await _ladders_and_names(
            pool,
            {e.match_id for e in page},
            {e.event.admin for e in page if isinstance(e.event, DisputeDecided | MatchAnnulled)},
        )
        for stored in page:
            event = stored.event
            if not isinstance(event, DisputeDecided | MatchAnnulled):
                continue
            ladder_id = ladders.get(stored.match_id)
            if filters.ladder is not None and ladder_id != filters.ladder:
                continue
            if filters.admin is not None and filters.admin not in (
                event.admin,
                names.get(event.admin),
            ):
                continue
            if filters.after_time is not None and stored.recorded_at <= filters.after_time:
                continue
            out.append(
                AdminAction(
                    position=stored.position,
                    recorded_at=stored.recorded_at,
                    kind="dispute_decided"
                    if isinstance(event, DisputeDecided)
                    else "match_annulled",
                    match_id=stored.match_id,
                    version=stored.version,
                    ladder_id=ladder_id,
                    admin=event.admin,
                    admin_name=names.get(event.admin),
                    reason=event.reason,
                    dispute_id=event.dispute_id,
                    upheld=event.upheld if isinstance(event, DisputeDecided) else None,
                )
            )
            if len(out) >= limit:
                break
        if len(page) < PAGE:
            break
    return out
