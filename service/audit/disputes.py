"""Disputes and admin decisions, as events appended to the match's own log.

Nothing here edits or deletes: a dispute is a ``DisputeFiled`` event, a
decision a ``DisputeDecided`` event carrying the admin's id (followed, when
upheld, by ``MatchAnnulled``), and an annulment without a dispute is a lone
``MatchAnnulled``. Each append goes through the event store at the version
the check was made against, so two admins deciding the same dispute at once
cannot both win: the loser re-reads, finds it decided, and is refused.

After a commit: the match-summary projection is updated, the match
service's after-commit hooks run (live clients hear of it), and an
annulment asks for the ladder's ratings to be recomputed without the match.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from schemas.cards import Seat
from schemas.events import (
    DisputeDecided,
    DisputeFiled,
    Event,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
)
from service.audit.admin_events import disputes as dispute_states
from service.audit.report import DisputeState
from service.audit.rows import RawRow
from service.errors import Conflict, Forbidden, NotFound, ValidationFailed, VersionConflict

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from service.api.auth import Player
    from service.store import EventStore, StoredEvent

log = logging.getLogger("matcha.audit")

DEFAULT_DISPUTE_WINDOW_S = 86_400
"""For a match outside any ladder (a ladder sets its own ``dispute_window_s``)."""

MAX_REASON = 2_000
APPEND_ATTEMPTS = 3
"""A racing append (another event landed first) is re-checked from fresh state."""

Hook = Callable[[str, "list[StoredEvent]"], Awaitable[None]]
LadderHook = Callable[[str], Awaitable[None] | None]


def _reason(text: str, what: str) -> str:
    text = text.strip()
    if not text:
        raise ValidationFailed(f"A {what} needs a written reason.", code="reason_required")
    if len(text) > MAX_REASON:
        raise ValidationFailed(f"A {what}'s reason is at most {MAX_REASON} characters.")
    return text


def _rows(events: Sequence[StoredEvent]) -> list[RawRow]:
    """Stored events as the audit's rows, to share one reading of dispute states."""
    from service.audit.refold import as_json

    return [
        RawRow(
            position=e.position,
            match_id=e.match_id,
            version=e.version,
            type=e.type,
            data=as_json(e.event),
            actor=e.actor,
            recorded_at=e.recorded_at,
            prev_hash=e.prev_hash,
            hash=e.hash,
        )
        for e in events
    ]


class DisputeService:
    """Files disputes, records decisions and annulments (``app.state.disputes``)."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        store: EventStore,
        *,
        after_commit: Sequence[Hook] = (),
        on_annulled: LadderHook | None = None,
    ) -> None:
        self.pool = pool
        self.store = store
        self.after_commit = after_commit
        """The match service's hooks (a live list: hooks registered later count too)."""
        self.on_annulled = on_annulled
        """``fn(ladder_id)``: recompute the ladder's ratings (the RQ enqueue)."""

    # -- reads -------------------------------------------------------------------

    async def _load(self, match_id: str) -> tuple[list[StoredEvent], MatchCreated]:
        events = await self.store.load(match_id)
        if not events:
            raise NotFound("No match has this id.", code="match_not_found")
        created = events[0].event
        if not isinstance(created, MatchCreated):
            raise Conflict("This match's log does not start with its creation.")
        return events, created

    async def disputes(self, match_id: str, viewer: Player) -> list[DisputeState]:
        """The match's disputes: all of them for an admin, else the viewer's own."""
        events, _ = await self._load(match_id)
        found = dispute_states(_rows(events))
        if viewer.has("admin"):
            return found
        return [d for d in found if d.player == viewer.id]

    async def _dispute_match(self, dispute_id: str) -> str:
        # Few rows are dispute_filed, and (type, position) is indexed: no
        # index of our own is needed to find a dispute's match.
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT match_id FROM events WHERE type = 'dispute_filed'"
                " AND data ->> 'dispute_id' = %s",
                (dispute_id,),
            )
            row = await cur.fetchone()
        if row is None:
            raise NotFound("No dispute has this id.", code="dispute_not_found")
        return str(row[0])

    async def _window_s(self, ladder_id: str | None) -> int:
        if ladder_id is None:
            return DEFAULT_DISPUTE_WINDOW_S
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT dispute_window_s FROM ladders WHERE id = %s", (ladder_id,)
            )
            row = await cur.fetchone()
        return DEFAULT_DISPUTE_WINDOW_S if row is None else int(row[0])

    # -- writes ------------------------------------------------------------------

    async def _append(
        self, match_id: str, version: int, events: list[Event], actor: str, all_events: list[Any]
    ) -> None:
        await self.store.append(match_id, version, events, actor=actor)
        await self._project([*(e.event for e in all_events), *events])
        await self._after_commit(match_id, version)

    async def _project(self, events: list[Event]) -> None:
        from service.api.summaries import save_summary, summarise

        try:
            async with self.pool.connection() as conn:
                await save_summary(conn, summarise(events))
        except Exception:  # a projection is rebuilt from the log; never fail the append
            log.exception("could not update the match summary after an admin event")

    async def _after_commit(self, match_id: str, after_version: int) -> None:
        if not self.after_commit:
            return
        try:
            stored = await self.store.load(match_id, after=after_version)
        except Exception:
            log.exception("could not reload match %s for the after-commit hooks", match_id)
            return
        for hook in list(self.after_commit):
            try:
                await hook(match_id, stored)
            except Exception:  # a hint channel must never fail a committed decision
                log.exception("after-commit hook %r failed for match %s", hook, match_id)

    async def _annulled(self, ladder_id: str | None) -> None:
        if ladder_id is None or self.on_annulled is None:
            return
        try:
            result = self.on_annulled(ladder_id)
            if result is not None:
                await result
        except Exception:  # the annulment is committed; the recompute can be re-asked
            log.exception("could not enqueue the ratings recompute of ladder %s", ladder_id)

    async def file(
        self, match_id: str, player: Player, reason: str, *, now: datetime | None = None
    ) -> DisputeState:
        """A player of a finished match disputes it, within the ladder's window."""
        reason = _reason(reason, "dispute")
        for attempt in range(APPEND_ATTEMPTS):
            events, created = await self._load(match_id)
            if player.id not in created.players:
                raise Forbidden("Only the two players of this match may dispute it.")
            seat: Seat = 0 if created.players[0] == player.id else 1
            ended = next((e for e in events if isinstance(e.event, MatchEnded)), None)
            if any(isinstance(e.event, MatchAnnulled) for e in events):
                raise Conflict("This match was annulled.", code="match_annulled")
            if ended is None:
                raise Conflict(
                    "A match can be disputed once it has ended.", code="match_not_finished"
                )
            window = await self._window_s(created.ladder_id)
            at = now or datetime.now(UTC)
            if at > ended.recorded_at + timedelta(seconds=window):
                raise Conflict(
                    f"Disputes on this match closed {window} seconds after it ended.",
                    code="dispute_window_closed",
                )
            mine = [d for d in dispute_states(_rows(events)) if d.player == player.id]
            if any(d.state == "filed" for d in mine):
                raise Conflict(
                    "You already have a dispute on this match waiting for a decision.",
                    code="dispute_pending",
                )
            filed = DisputeFiled(
                dispute_id=str(uuid.uuid4()), seat=seat, player=player.id, reason=reason
            )
            try:
                await self._append(match_id, len(events), [filed], player.id, events)
            except VersionConflict:
                if attempt + 1 == APPEND_ATTEMPTS:
                    raise
                continue
            found = await self.disputes(match_id, player)
            return next(d for d in found if d.dispute_id == filed.dispute_id)
        raise AssertionError("unreachable")

    async def decide(
        self, dispute_id: str, admin: Player, upheld: bool, reason: str
    ) -> DisputeState:
        """Uphold (annul the match) or reject a dispute, with the admin's written reason."""
        reason = _reason(reason, "decision")
        match_id = await self._dispute_match(dispute_id)
        for attempt in range(APPEND_ATTEMPTS):
            events, created = await self._load(match_id)
            state = next(
                (d for d in dispute_states(_rows(events)) if d.dispute_id == dispute_id), None
            )
            if state is None:
                raise NotFound("No dispute has this id.", code="dispute_not_found")
            if state.state != "filed":
                raise Conflict(
                    f"This dispute was already {state.state} by {state.decided_by}.",
                    code="dispute_decided",
                )
            new: list[Event] = [
                DisputeDecided(dispute_id=dispute_id, upheld=upheld, admin=admin.id, reason=reason)
            ]
            annul = upheld and not any(isinstance(e.event, MatchAnnulled) for e in events)
            if annul:
                new.append(MatchAnnulled(admin=admin.id, reason=reason, dispute_id=dispute_id))
            try:
                await self._append(match_id, len(events), new, admin.id, events)
            except VersionConflict:
                if attempt + 1 == APPEND_ATTEMPTS:
                    raise
                continue
            if annul:
                await self._annulled(created.ladder_id)
            found = await self.disputes(match_id, admin)
            return next(d for d in found if d.dispute_id == dispute_id)
        raise AssertionError("unreachable")

    async def annul(self, match_id: str, admin: Player, reason: str) -> int:
        """Annul a match without a dispute; returns the annulment's version."""
        reason = _reason(reason, "annulment")
        for attempt in range(APPEND_ATTEMPTS):
            events, created = await self._load(match_id)
            if any(isinstance(e.event, MatchAnnulled) for e in events):
                raise Conflict("This match is already annulled.", code="match_annulled")
            try:
                await self._append(
                    match_id,
                    len(events),
                    [MatchAnnulled(admin=admin.id, reason=reason)],
                    admin.id,
                    events,
                )
            except VersionConflict:
                if attempt + 1 == APPEND_ATTEMPTS:
                    raise
                continue
            await self._annulled(created.ladder_id)
            return len(events) + 1
        raise AssertionError("unreachable")
