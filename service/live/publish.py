"""After an append commits: tell every process (and the lobby) through Redis.

Best effort by design: the events table is the truth and every stream checks
it, so a publish that fails is logged and counted and never fails the command
that caused it. Hints carry the full events (they stay between our servers);
each subscriber redacts per viewer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from schemas.events import (
    Event,
    HandDealt,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
    RoundRevealed,
)
from service.api.summaries import summarise
from service.live import channels, metrics
from service.live.wire import EventsHint, LobbySummary, WireEvent, hint_encoder

log = logging.getLogger(__name__)

PUBLISH_TIMEOUT_S = 0.5
"""A commit never waits longer than this for Redis."""

_LOBBY_EVENTS = (MatchCreated, HandDealt, RoundRevealed, MatchEnded, MatchAnnulled)

LOG_CACHE_SIZE = 1_000
"""Matches whose log the publisher keeps, to tally a lobby summary without a read."""


class StoredLike(Protocol):
    """The part of ``service.store.StoredEvent`` live play reads."""

    @property
    def version(self) -> int: ...
    @property
    def event(self) -> Event: ...
    @property
    def recorded_at(self) -> Any: ...


def wire_event(stored: StoredLike) -> WireEvent:
    return WireEvent(
        version=stored.version,
        recorded_at=stored.recorded_at,
        event=stored.event,
        actor=getattr(stored, "actor", None),
        position=getattr(stored, "position", None),
    )


class Loader(Protocol):
    async def __call__(self, match_id: str) -> Sequence[StoredLike]: ...


def events_hint(match_id: str, stored: Sequence[StoredLike]) -> EventsHint:
    ordered = sorted(stored, key=lambda s: s.version)
    return EventsHint(
        match_id=match_id,
        first_version=ordered[0].version,
        last_version=ordered[-1].version,
        events=tuple(wire_event(s) for s in ordered),
    )


_LOBBY_STATUS: dict[str, Literal["progress", "finished", "annulled"]] = {
    "live": "progress",
    "finished": "finished",
    "annulled": "annulled",
}


def lobby_summary(match_id: str, log_: Sequence[StoredLike]) -> LobbySummary | None:
    """Public facts of a match from its whole log: players, hand, tokens, result.

    The very tally the match list shows (``service.api.summaries.summarise``),
    so a lobby page updated live never disagrees with one loaded afresh.
    """
    if not log_:
        return None
    summary = summarise((s.event for s in log_), first_version=log_[0].version)
    status: Literal["started", "progress", "finished", "annulled"] = _LOBBY_STATUS[summary.status]
    last = log_[-1]
    dealing_first_hand = isinstance(last.event, MatchCreated | HandDealt) and summary.hand <= 1
    if status == "progress" and dealing_first_hand:
        status = "started"
    return LobbySummary(
        match_id=match_id,
        status=status,
        version=last.version,
        ladder_id=summary.ladder_id,
        players=summary.players,
        hand=summary.hand,
        tokens=summary.tokens,
        winner=summary.winner,
        reason=summary.end_reason,
    )


class Publisher:
    """The ``MatchService.after_commit`` hook: ``await publisher(match_id, stored_events)``."""

    def __init__(self, redis: Any, prefix: str, load_log: Loader | None = None) -> None:
        self._redis = redis
        self._prefix = prefix
        self._load_log = load_log
        self._background: set[asyncio.Task[None]] = set()
        # match_id -> its log as this process saw it committed, kept only while
        # gapless: a lobby summary is then a tally of memory, not a read of the
        # whole log per reveal (which cost ~6% of the API's CPU under
        # bench/bench_api.py). Another process's append leaves a gap: reload.
        self._logs: OrderedDict[str, list[StoredLike]] = OrderedDict()

    async def __call__(self, match_id: str, stored_events: Sequence[StoredLike]) -> None:
        if not stored_events:
            return
        hint = events_hint(match_id, stored_events)
        log_ = self._extend_log(match_id, hint)
        await self._publish(
            channels.match_channel(self._prefix, match_id), hint_encoder.encode(hint)
        )
        if self._load_log is not None and any(
            isinstance(s.event, _LOBBY_EVENTS) for s in stored_events
        ):
            # The lobby can wait a moment; the player's command need not.
            summary = lobby_summary(match_id, log_) if log_ is not None else None
            task = asyncio.create_task(self._publish_lobby(match_id, summary))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _extend_log(self, match_id: str, hint: EventsHint) -> list[StoredLike] | None:
        """The match's whole log if this process knows it without a gap, else None."""
        known = self._logs.get(match_id)
        if hint.first_version == 1:
            known = []
        elif known is None or known[-1].version != hint.first_version - 1:
            self._logs.pop(match_id, None)
            return None
        known = [*known, *hint.events]
        self._logs[match_id] = known
        self._logs.move_to_end(match_id)
        while len(self._logs) > LOG_CACHE_SIZE:
            self._logs.popitem(last=False)
        return known

    async def _publish_lobby(self, match_id: str, summary: LobbySummary | None = None) -> None:
        if summary is None:
            assert self._load_log is not None
            try:
                log_ = list(await self._load_log(match_id))
                summary = lobby_summary(match_id, log_)
            except Exception:
                log.exception("lobby summary of %s failed", match_id)
                metrics.publish_failures.labels("lobby").inc()
                return
            if log_ and log_[0].version == 1 and log_[-1].version == len(log_):
                self._remember_log(match_id, log_)
        if summary is not None:
            await self._publish(channels.lobby_channel(self._prefix), hint_encoder.encode(summary))

    def _remember_log(self, match_id: str, log_: list[StoredLike]) -> None:
        known = self._logs.get(match_id)
        if known is None or known[-1].version < log_[-1].version:
            self._logs[match_id] = log_
            self._logs.move_to_end(match_id)
            while len(self._logs) > LOG_CACHE_SIZE:
                self._logs.popitem(last=False)

    async def _publish(self, channel: str, payload: bytes) -> None:
        kind = "lobby" if channel.endswith(":lobby") else "match"
        try:
            # asyncio.timeout, not wait_for: no extra task per publish (3.11).
            async with asyncio.timeout(PUBLISH_TIMEOUT_S):
                await self._redis.publish(channel, payload)
        except Exception as exc:  # best effort: any failure is logged, counted, swallowed
            log.warning(
                "live publish to %s failed (%s); viewers will refill from the store", channel, exc
            )
            metrics.publish_failures.labels(kind).inc()
        else:
            metrics.published.labels(kind).inc()

    async def drain(self) -> None:
        """Wait for lobby publishes in flight (at shutdown)."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
