"""After an append commits: tell every process (and the lobby) through Redis.

Best effort by design: the events table is the truth and every stream checks
it, so a publish that fails is logged and counted and never fails the command
that caused it. A hint carries the new events only as the public may see
them (``public_events``: the policy's ``public_sight``, applied by the
engine's ``redact``): the broker never holds a hidden card, and the
spectators' frames are made from it without a read; a seat's or an
administrator's stream reads its own events from the store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from schemas.clocks import Clocks
from schemas.events import (
    Event,
    HandDealt,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
    RoundRevealed,
)
from service.broker import channels, metrics
from service.broker.hints import EventsHint, LobbySummary, WireEvent, hint_encoder
from service.cache import Bounded
from service.engine import redact
from service.matches import Committed, MatchFacts, public_sight
from service.matches.summaries import Summary, summarise

log = logging.getLogger(__name__)

PUBLISH_TIMEOUT_S = 0.5
"""A commit never waits longer than this for Redis."""

_LOBBY_EVENTS = (MatchCreated, HandDealt, RoundRevealed, MatchEnded, MatchAnnulled)

LOG_CACHE_SIZE = 1_000
"""Matches whose log the publisher keeps, to tally a lobby summary without a read."""


class StoredLike(Protocol):
    """The part of ``service.store.StoredEvent`` a hint (and live play) reads."""

    @property
    def version(self) -> int: ...
    @property
    def event(self) -> Event: ...
    @property
    def recorded_at(self) -> Any: ...


def public_events(
    stored: Sequence[StoredLike], facts: MatchFacts | None, *, over_before: bool
) -> tuple[WireEvent, ...]:
    """``stored`` (one match's next events, in order) as the public may see each
    (``public_sight``): redacted as the match stood then (over from its end or
    annulment on). ``facts`` None: no terms known, every hand hidden."""
    sights = (public_sight(facts, over=False), public_sight(facts, over=True))
    out: list[WireEvent] = []
    over = over_before
    for s in sorted(stored, key=lambda s: s.version):
        over = over or isinstance(s.event, MatchEnded | MatchAnnulled)
        sight = sights[over]
        out.append(
            WireEvent(
                version=s.version,
                recorded_at=s.recorded_at,
                event=redact(
                    s.event, sight.viewer, match_over=over, hide_hands_in_replay=sight.hide
                ),
                actor=getattr(s, "actor", None),
                position=getattr(s, "position", None),
            )
        )
    return tuple(out)


class Loader(Protocol):
    async def __call__(self, match_id: str) -> Sequence[StoredLike]: ...


def events_hint(
    match_id: str,
    stored: Sequence[StoredLike],
    facts: MatchFacts | None = None,
    *,
    over_before: bool = False,
    clocks: Clocks | None = None,
) -> EventsHint:
    events = public_events(stored, facts, over_before=over_before)
    return EventsHint(
        match_id=match_id,
        first_version=events[0].version,
        last_version=events[-1].version,
        events=events,
        clocks=clocks,
    )


_LOBBY_STATUS: dict[str, Literal["progress", "finished", "annulled"]] = {
    "live": "progress",
    "finished": "finished",
    "annulled": "annulled",
}


def lobby_summary(match_id: str, log_: Sequence[StoredLike]) -> LobbySummary | None:
    """Public facts of a match from its whole log: players, hand, tokens, result.

    The very tally the match list shows (``service.matches.summaries.summarise``),
    so a lobby page updated live never disagrees with one loaded afresh.
    """
    if not log_:
        return None
    summary = summarise((s.event for s in log_), first_version=log_[0].version)
    return lobby_of(match_id, summary, log_[-1])


def lobby_of(match_id: str, summary: Summary, last: StoredLike) -> LobbySummary:
    """The lobby's summary of a match from its ``match_summaries`` tally after ``last``
    (its latest row): what ``lobby_summary`` makes of the whole log."""
    status: Literal["started", "progress", "finished", "annulled"] = _LOBBY_STATUS[summary.status]
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
    """The match core's after-commit hook: ``await publisher(committed)``."""

    def __init__(self, redis: Any, prefix: str, load_log: Loader | None = None) -> None:
        self._redis = redis
        self._prefix = prefix
        self._load_log = load_log
        self._background: set[asyncio.Task[None]] = set()
        # match_id -> its log as this process saw it committed, kept only while
        # gapless: a lobby summary is then a tally of memory, not a read of the
        # whole log per reveal (which cost ~6% of the API's CPU under
        # bench/bench_api.py). Another process's append leaves a gap: reload.
        self._logs: Bounded[str, list[StoredLike]] = Bounded(LOG_CACHE_SIZE)

    async def __call__(self, committed: Committed) -> None:
        stored_events = committed.stored
        if not stored_events:
            return
        match_id = committed.match_id
        hint = events_hint(
            match_id,
            stored_events,
            committed.facts,
            over_before=committed.over_before,
            clocks=committed.clocks,
        )
        tallied = committed.summary
        # The core's tally of the match (its match_summaries row) makes the lobby's
        # summary without the log: before it, every command copied the match's log
        # kept here, and an append by another process meant a read of the whole log
        # (~3 % of a worker's samples under `python -m bench api`, socket path).
        log_ = None if tallied is not None else self._extend_log(match_id, stored_events)
        await self._publish(
            channels.match_channel(self._prefix, match_id), hint_encoder.encode(hint)
        )
        if self._load_log is not None and any(
            isinstance(s.event, _LOBBY_EVENTS) for s in stored_events
        ):
            # The lobby can wait a moment; the player's command need not.
            summary: LobbySummary | None = None
            if tallied is not None:
                summary = lobby_of(match_id, tallied, stored_events[-1])
            elif log_ is not None:
                summary = lobby_summary(match_id, log_)
            task = asyncio.create_task(self._publish_lobby(match_id, summary))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _extend_log(self, match_id: str, stored: Sequence[StoredLike]) -> list[StoredLike] | None:
        """The match's whole log if this process knows it without a gap, else None."""
        known = self._logs.get(match_id)
        if stored[0].version == 1:
            known = []
        elif known is None or known[-1].version != stored[0].version - 1:
            self._logs.pop(match_id)
            return None
        known = [*known, *stored]
        self._logs.put(match_id, known)
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
        self._logs.put_if(match_id, log_, lambda new, held: new[-1].version > held[-1].version)

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
