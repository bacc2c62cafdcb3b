"""A local connection's mailbox in the hub: bounded, taken all at once.

Not an ``asyncio.Queue``: a viewer takes everything waiting at once, and an
offer costs one append and (when the reader sleeps) one wake-up. This is the
hot path of a fan-out (1,000 offers per event for 1,000 spectators).
"""

from __future__ import annotations

import asyncio
from collections import deque

from service.broker.hints import EventsHint, LobbySummary, OddsHint
from service.live.wire import PresenceFrame


class Tick:
    """Time for an idle ping (one hub timer instead of one per connection)."""


TICK = Tick()

Item = EventsHint | PresenceFrame | LobbySummary | OddsHint | Tick


class Subscription:
    """One local connection's view of the hub: a bounded mailbox of hints."""

    __slots__ = ("_waiter", "items", "lagging", "match_id", "size")

    def __init__(self, match_id: str | None, size: int) -> None:
        self.match_id = match_id
        self.size = size
        self.items: deque[Item] = deque()
        """Offered and not yet taken, oldest first."""
        self.lagging = False
        """Set when a hint found the mailbox full: the connection must resume with ``since``."""
        self._waiter: asyncio.Future[None] | None = None

    def offer(self, item: Item) -> None:
        if self.lagging:
            return
        if len(self.items) >= self.size:
            self.lagging = True  # the reader stops at its next item, whatever it is
        self.items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def waiter(self, timeout: float | None = None) -> asyncio.Future[None]:
        """A future done when something is offered (at once if something waits),
        or after ``timeout`` seconds. A plain future, not a coroutine: the reader
        awaits it directly (one wake-up per fan-out, nothing more)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        if self.items:
            waiter.set_result(None)
            return waiter
        self._waiter = waiter
        if timeout is not None:
            timer = loop.call_later(timeout, _wake, waiter)
            waiter.add_done_callback(lambda _w: timer.cancel())
        return waiter


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
