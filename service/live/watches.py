"""What the hub keeps per watched match: its local subscriptions, the highest
version this process knows is committed, presence, and the rows this process
itself appended lately. Shared by the hub's fan-out, its catch-up and its
presence (``Watches``: one per hub)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from service.broker.publish import StoredLike
from service.live.mailbox import Subscription
from service.live.wire import PresenceFrame


@dataclass
class Watch:
    subs: set[Subscription] = field(default_factory=set)
    known: int | None = None
    """The highest version this process knows is committed (None: not yet read)."""
    presence: PresenceFrame | None = None
    local_members: dict[str, str] = field(default_factory=dict)
    """Presence members of this process's connections: connection id -> role."""
    recount: asyncio.Task[None] | None = None
    recent: tuple[StoredLike, ...] = ()
    """The last rows this process itself appended to the match (whole, contiguous,
    at most ``catchup.RECENT_ROWS``): a seat's stream takes them from here instead of the
    store when they reach what the hub knows is committed (``remember``)."""


class Watches:
    """The hub's watched matches and lobby subscriptions."""

    def __init__(self, queue_size: int) -> None:
        self.queue_size = queue_size
        self.matches: dict[str, Watch] = {}
        self.lobby: set[Subscription] = set()

    def subscribe(self, match_id: str) -> Subscription:
        sub = Subscription(match_id, self.queue_size)
        watch = self.matches.setdefault(match_id, Watch())
        watch.subs.add(sub)
        if watch.presence is not None:
            sub.offer(watch.presence)
        return sub

    def subscribe_lobby(self) -> Subscription:
        sub = Subscription(None, self.queue_size)
        self.lobby.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub.match_id is None:
            self.lobby.discard(sub)
            return
        watch = self.matches.get(sub.match_id)
        if watch is None:
            return
        watch.subs.discard(sub)
        self.forget_if_idle(sub.match_id)

    def watching(self, match_id: str) -> int:
        watch = self.matches.get(match_id)
        return len(watch.subs) if watch else 0

    def note(self, match_id: str, version: int) -> None:
        """``version`` is committed: raise what the match's watch knows to it."""
        watch = self.matches.get(match_id)
        if watch is not None and (watch.known is None or version > watch.known):
            watch.known = version

    def forget_if_idle(self, match_id: str) -> None:
        watch = self.matches.get(match_id)
        if watch is not None and not watch.subs and not watch.local_members:
            if watch.recount is not None:
                watch.recount.cancel()
            del self.matches[match_id]
