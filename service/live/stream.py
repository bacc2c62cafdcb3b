"""One viewer's stream of a match: every event after ``since``, in order, once.

The known-correct order:

1. subscribe (locally, to the process's one Redis subscription) *first*, so
   nothing committed from now on can slip past unseen;
2. catch up from the store (the truth) after ``since``;
3. then deliver live hints, de-duplicated by version; a hint that starts
   beyond the next expected version reveals a gap, filled from the store.
   A spectator takes the public events a hint carries; any other viewer (a
   seat, an administrator after the end) reads its events from the store, as
   the broker carries nothing a spectator may not see.

The hub's periodic comparison with the store covers hints Redis lost. Each
event is shaped for this viewer by ``service.engine.redact`` (through
``render``) just before it is sent; the viewer policy (``Seen``) says who the
viewer is and how late a spectator of a delayed match gets each event.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from schemas.clocks import Clocks
from schemas.events import Event, MatchAnnulled, MatchEnded
from schemas.views import EventView, MatchEndedView, Viewer
from service.broker.hints import EventsHint, LobbySummary, OddsHint
from service.live import metrics
from service.live.hub import Hub
from service.live.mailbox import Subscription, Tick
from service.live.wire import (
    ClocksFrame,
    LobbyFrame,
    OddsFrame,
    PingFrame,
    PresenceFrame,
    frame_encoder,
)
from service.matches import Seen


class Shown(Protocol):
    """An event a stream may send: a stored row (whole) or a hint's public event."""

    @property
    def version(self) -> int: ...
    @property
    def event(self) -> Event | EventView: ...
    @property
    def recorded_at(self) -> datetime: ...


_OVER = (MatchEnded, MatchEndedView, MatchAnnulled)
"""The events from which a match is over (ended or annulled), whole or redacted."""


@dataclass(frozen=True, slots=True)
class Outbound:
    """One frame as it is written to a connection: its bytes, shared where they can be."""

    data: str
    """The JSON text of one frame (shared by every viewer who gets the same bytes)."""
    version: int | None = None
    """Set on event frames: the SSE id, the client's resume point."""


Render = Callable[[str, Shown, Viewer, bool], Outbound]
"""``(match_id, event, viewer, match_over)`` → the event frame for that viewer (may be shared)."""


class Lagging(Exception):
    """The client fell too far behind; it should resume with ``since=last_version``."""

    def __init__(self, last_version: int) -> None:
        super().__init__(f"too far behind: reconnect with since={last_version}")
        self.last_version = last_version


@functools.lru_cache(maxsize=64)
def _presence_frame(presence: PresenceFrame) -> Outbound:
    """Encoded once per distinct presence, not once per viewer."""
    return Outbound(data=frame_encoder.encode(presence).decode())


@functools.lru_cache(maxsize=256)
def _odds_frame(version: int, p: tuple[float, float]) -> Outbound:
    """Encoded once per estimate, not once per spectator."""
    return Outbound(data=frame_encoder.encode(OddsFrame(version=version, p=p)).decode())


@functools.lru_cache(maxsize=256)
def _clocks_frame(version: int, clocks: Clocks) -> Outbound:
    """Encoded once per append of a timed match, not once per viewer."""
    return Outbound(data=frame_encoder.encode(ClocksFrame(version=version, clocks=clocks)).decode())


def _ping_frame(version: int) -> Outbound:
    return Outbound(data=frame_encoder.encode(PingFrame(version=version)).decode())


class ViewerStream:
    """Call ``next_frames`` until it raises (``Lagging``) or you stop, then ``close``.

    ``frames()`` is the same as an async iterator of single frames. A sender on
    the hot path calls ``take()`` first and awaits ``wakeup()`` when it has
    nothing, falling back to ``next_frames()`` when ``take()`` says None.
    """

    def __init__(
        self,
        hub: Hub,
        *,
        match_id: str,
        seen: Seen,
        since: int,
        render: Render,
    ) -> None:
        self.hub = hub
        self.match_id = match_id
        self.seen = seen
        self.viewer: Viewer = seen.viewer
        self.render = render
        self.delay_s = seen.delay_s
        self._public = seen.viewer == "spectator"
        """The public events of a hint are this viewer's own (else it reads the store)."""
        self.accepted = since
        """The last version taken from the store or a hint (maybe not yet sent)."""
        self.sent = since
        """The last version handed out by ``next_frames``: where a resume starts."""
        self._pending: deque[Shown] = deque()
        self._ended_at: int | None = None
        self._replay = False
        self._sub: Subscription | None = None
        self._closed = False
        self._refill_due = False
        """A hint showed a gap (or named versions without carrying them): read the store."""
        self._clocks: tuple[int, Clocks] | None = None
        """The clocks after the latest append, not yet sent: like the odds, they wait
        until their event has been sent (they would tell a delayed spectator that a
        move was made)."""
        self._odds: OddsHint | None = None
        """The latest estimate not yet sent: it waits until its event has been sent
        (a delayed spectator must not learn the odds of a move it has not seen)."""

    async def _start(self) -> Subscription:
        sub = self._sub = self.hub.subscribe(self.match_id)  # 1. subscribe first
        catch_up = await self.hub.load_after(self.match_id, self.accepted)  # 2. the store
        self._accept(catch_up)
        # Connected after the end (and the end is due for this viewer): a replay,
        # where everyone sees the whole log.
        self._replay = (
            self._ended_at is not None
            and self._due_in(next(e for e in self._pending if e.version == self._ended_at)) <= 0
        )
        return sub

    def close(self) -> None:
        """Leave the hub (idempotent)."""
        self._closed = True
        if self._sub is not None:
            self.hub.unsubscribe(self._sub)
            self._sub = None

    def take(self) -> list[Outbound] | None:
        """The frames due now, without waiting (maybe none).

        None when something must be awaited first (the start, a read from the
        store): ``next_frames`` does that. The hot path: a woken sender calls
        this, sends, and awaits ``wakeup()``; no coroutine per fan-out.
        """
        sub = self._sub
        if sub is None or self._refill_due:
            return None
        out: list[Outbound] = []
        if self._collect(sub, out) and not out:
            return None
        return out

    def wakeup(self) -> asyncio.Future[None]:
        """Done when ``take`` may have something: a hint came, or a delayed event is due."""
        sub = self._sub
        if sub is None:
            raise RuntimeError("the stream is not started")
        if self._pending:  # a delayed spectator: wake when the next one is due
            return sub.waiter(max(self._due_in(self._pending[0]), 0.0))
        # No timer per wait (the hot path): idle pings come as hub ticks.
        return sub.waiter()

    async def next_frames(self) -> list[Outbound]:
        """The frames due now, in order (never none): waits until there are some.

        Everything waiting in the mailbox is taken at once, in the order it was
        offered; the frames come out exactly as if the items were taken one by one.
        Raises ``Lagging`` once the frames handed out before the overflow are gone.
        """
        while True:
            sub = self._sub
            if sub is None:
                if self._closed:
                    raise RuntimeError("the stream is closed")
                sub = await self._start()
            if self._refill_due:
                # A gap before a hint, or a hint without its events: the store has them.
                self._refill_due = False
                self._accept(await self.hub.load_after(self.match_id, self.accepted))
            out: list[Outbound] = []
            self._collect(sub, out)
            if out:
                return out
            if not self._refill_due:
                await self.wakeup()

    def _collect(self, sub: Subscription, out: list[Outbound]) -> bool:
        """Due frames and mailbox items, in order, into ``out``; true when it stopped
        because the store must be read before the next item."""
        self._due_frames(out)
        items = sub.items
        while items:
            if sub.lagging:
                if out:
                    return False  # sent first; the next call says where to resume
                metrics.lagging.inc()
                raise Lagging(self.sent)
            item = items.popleft()
            match item:  # 3. live hints
                case EventsHint() as hint:
                    if hint.clocks is not None and (
                        self._clocks is None or hint.last_version >= self._clocks[0]
                    ):
                        self._clocks = (hint.last_version, hint.clocks)
                    if self._take(hint):
                        metrics.refills.labels("gap").inc()
                        self._refill_due = True
                        return True
                    self._due_frames(out)
                case PresenceFrame() as presence:
                    out.append(_presence_frame(presence))
                case OddsHint() as odds:
                    # Spectators only: a player is never told how the odds stand.
                    if self._public and (self._odds is None or odds.version >= self._odds.version):
                        self._odds = odds
                        self._due_odds(out)
                case Tick():
                    if not self._pending:
                        out.append(_ping_frame(self.sent))
                case LobbySummary():
                    pass
        return False

    async def frames(self) -> AsyncGenerator[Outbound, None]:
        """One frame at a time (SSE, tests); the stream closes with the generator."""
        try:
            while True:
                for frame in await self.next_frames():
                    yield frame
        finally:
            self.close()

    def _take(self, hint: EventsHint) -> bool:
        """Accept what the hint carries; true if the store must fill in what it lacks."""
        if hint.last_version <= self.accepted:
            return False  # every event already taken: a duplicate hint
        if self._public and hint.first_version <= self.accepted + 1:
            self._accept(hint.events)
        return self.accepted < hint.last_version

    def _accept(self, events: Iterable[Shown]) -> None:
        for event in events:
            if event.version <= self.accepted:
                continue  # already taken
            if event.version != self.accepted + 1:
                # Never deliver out of order: what is missing comes from the store next time.
                break
            if self._ended_at is None and isinstance(event.event, _OVER):
                self._ended_at = event.version
            self._pending.append(event)
            self.accepted = event.version

    def _due_in(self, event: Shown) -> float:
        if not self.delay_s:
            return 0.0
        return self.seen.due_in(event.recorded_at, datetime.now(UTC))

    def _due_odds(self, out: list[Outbound]) -> None:
        odds = self._odds
        if odds is not None and odds.version <= self.sent:
            self._odds = None
            out.append(_odds_frame(odds.version, odds.p))

    def _due_frames(self, out: list[Outbound]) -> None:
        pending = self._pending
        while pending and (not self.delay_s or self._due_in(pending[0]) <= 0):
            event = pending.popleft()
            over = self._replay or (self._ended_at is not None and event.version >= self._ended_at)
            out.append(self.render(self.match_id, event, self.viewer, over))
            self.sent = event.version
        clocks = self._clocks
        if clocks is not None and clocks[0] <= self.sent:
            self._clocks = None
            out.append(_clocks_frame(*clocks))
        if self._odds is not None:
            self._due_odds(out)


class LobbyStream:
    """Lobby summaries as they are published (public facts only, no redaction needed)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._sub: Subscription | None = hub.subscribe_lobby()

    def close(self) -> None:
        if self._sub is not None:
            self.hub.unsubscribe(self._sub)
            self._sub = None

    def take(self) -> list[Outbound] | None:
        sub = self._sub
        if sub is None:
            raise RuntimeError("the stream is closed")
        if sub.lagging:
            # The lobby is a view of summaries, not a log: skip ahead instead of closing.
            sub.lagging = False
            while len(sub.items) > 1:
                sub.items.popleft()
        out: list[Outbound] = []
        while sub.items:
            item = sub.items.popleft()
            if isinstance(item, LobbySummary):
                out.append(_lobby_frame(item))
            elif isinstance(item, Tick):
                out.append(_ping_frame(0))
        return out

    def wakeup(self) -> asyncio.Future[None]:
        if self._sub is None:
            raise RuntimeError("the stream is closed")
        return self._sub.waiter()

    async def next_frames(self) -> list[Outbound]:
        while True:
            out = self.take()
            if out:
                return out
            await self.wakeup()


_last_lobby: list[tuple[LobbySummary, Outbound]] = []


def _lobby_frame(summary: LobbySummary) -> Outbound:
    """Every lobby watcher is offered the same summary object: encode it once."""
    if _last_lobby and _last_lobby[0][0] is summary:
        return _last_lobby[0][1]
    frame = Outbound(data=frame_encoder.encode(LobbyFrame(summary=summary)).decode())
    _last_lobby[:] = [(summary, frame)]
    return frame


async def lobby_frames(hub: Hub) -> AsyncGenerator[str, None]:
    """The lobby's frames one at a time, as text (SSE)."""
    stream = LobbyStream(hub)
    try:
        while True:
            for frame in await stream.next_frames():
                yield frame.data
    finally:
        stream.close()
