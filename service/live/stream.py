"""One viewer's stream of a match: every event after ``since``, in order, once.

The known-correct order:

1. subscribe (locally, to the process's one Redis subscription) *first*, so
   nothing committed from now on can slip past unseen;
2. catch up from the store (the truth) after ``since``;
3. then deliver live hints, de-duplicated by version; a hint that starts
   beyond the next expected version reveals a gap, filled from the store.

The hub's periodic comparison with the store covers hints Redis lost. Each
event is shaped for this viewer by ``service.engine.redact`` (through
``render``) just before it is sent; spectators of a ladder with a delay get
each event ``delay_s`` after it was recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from schemas.cards import Seat
from schemas.events import MatchEnded
from service.live import metrics
from service.live.hub import Hub, Tick
from service.live.wire import (
    EventsHint,
    LobbyFrame,
    LobbySummary,
    PingFrame,
    PresenceFrame,
    WireEvent,
    frame_encoder,
)

Viewer: TypeAlias = Seat | Literal["spectator"]

Render = Callable[[str, WireEvent, Viewer, bool], str]
"""``(match_id, event, viewer, match_over)`` → the encoded event frame for that viewer."""


class Lagging(Exception):
    """The client fell too far behind; it should resume with ``since=last_version``."""

    def __init__(self, last_version: int) -> None:
        super().__init__(f"too far behind: reconnect with since={last_version}")
        self.last_version = last_version


@dataclass(frozen=True, kw_only=True)
class Frame:
    data: str
    """The JSON text of one frame (shared by every viewer who gets the same bytes)."""
    version: int | None = None
    """Set on event frames: the SSE id, the client's resume point."""


class ViewerStream:
    def __init__(
        self,
        hub: Hub,
        *,
        match_id: str,
        viewer: Viewer,
        since: int,
        render: Render,
        delay_s: float = 0.0,
    ) -> None:
        self.hub = hub
        self.match_id = match_id
        self.viewer = viewer
        self.render = render
        # Players see their own match at once; only spectators wait.
        self.delay_s = delay_s if viewer == "spectator" else 0.0
        self.accepted = since
        """The last version taken from the store or a hint (maybe not yet sent)."""
        self.sent = since
        """The last version sent: where a resume starts."""
        self._pending: deque[WireEvent] = deque()
        self._ended_at: int | None = None
        self._replay = False

    async def frames(self) -> AsyncGenerator[Frame, None]:
        sub = self.hub.subscribe(self.match_id)  # 1. subscribe first
        try:
            catch_up = await self.hub.load_after(self.match_id, self.accepted)  # 2. the store
            self._accept(catch_up)
            # Connected after the end (and the end is due for this viewer): a replay,
            # where everyone sees the whole log.
            self._replay = (
                self._ended_at is not None
                and self._due_in(next(e for e in self._pending if e.version == self._ended_at)) <= 0
            )
            while True:
                for frame in self._due_frames():
                    yield frame
                try:
                    item = sub.queue.get_nowait()
                except asyncio.QueueEmpty:
                    if self._pending:  # a delayed spectator: wake when the next one is due
                        try:
                            async with asyncio.timeout(max(self._due_in(self._pending[0]), 0)):
                                item = await sub.queue.get()
                        except TimeoutError:
                            continue
                    else:
                        # No timer per wait (the hot path): idle pings come as hub ticks.
                        item = await sub.queue.get()
                if sub.lagging:
                    metrics.lagging.inc()
                    raise Lagging(self.sent)
                match item:  # 3. live hints
                    case EventsHint() as hint:
                        await self._take(hint)
                    case PresenceFrame() as presence:
                        yield Frame(data=frame_encoder.encode(presence).decode())
                    case Tick():
                        if not self._pending:
                            yield Frame(
                                data=frame_encoder.encode(PingFrame(version=self.sent)).decode()
                            )
                    case LobbySummary():
                        pass
        finally:
            self.hub.unsubscribe(sub)

    async def _take(self, hint: EventsHint) -> None:
        if hint.last_version <= self.accepted:
            return  # every event already taken: a duplicate hint
        if hint.first_version <= self.accepted + 1:
            self._accept(e for e in hint.events if e.version > self.accepted)
        if self.accepted < hint.last_version:
            # A gap before the hint, or a hint without its events: the store has them.
            metrics.refills.labels("gap").inc()
            self._accept(await self.hub.load_after(self.match_id, self.accepted))

    def _accept(self, events: object) -> None:
        for event in events:  # type: ignore[attr-defined]
            if event.version != self.accepted + 1:
                # Never deliver out of order: what is missing comes from the store next time.
                break
            if isinstance(event.event, MatchEnded) and self._ended_at is None:
                self._ended_at = event.version
            self._pending.append(event)
            self.accepted = event.version

    def _due_in(self, event: WireEvent) -> float:
        if not self.delay_s:
            return 0.0
        return event.recorded_at.timestamp() + self.delay_s - time.time()

    def _due_frames(self) -> list[Frame]:
        out: list[Frame] = []
        while self._pending and self._due_in(self._pending[0]) <= 0:
            event = self._pending.popleft()
            over = self._replay or (self._ended_at is not None and event.version >= self._ended_at)
            out.append(
                Frame(
                    data=self.render(self.match_id, event, self.viewer, over),
                    version=event.version,
                )
            )
            self.sent = event.version
        return out


async def lobby_frames(hub: Hub) -> AsyncGenerator[str, None]:
    """Lobby summaries as they are published (public facts only, no redaction needed)."""
    sub = hub.subscribe_lobby()
    try:
        while True:
            item = await sub.queue.get()
            if sub.lagging:
                # The lobby is a view of summaries, not a log: skip ahead instead of closing.
                sub.lagging = False
                with contextlib.suppress(asyncio.QueueEmpty):
                    while True:
                        sub.queue.get_nowait()
            if isinstance(item, LobbySummary):
                yield frame_encoder.encode(LobbyFrame(summary=item)).decode()
            elif isinstance(item, Tick):
                yield frame_encoder.encode(PingFrame(version=0)).decode()
    finally:
        hub.unsubscribe(sub)
