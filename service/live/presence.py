"""Presence: who is connected to a match, across every process, in Redis.

Each connection is a member ``<connection id>|<role>`` of the match's sorted
set, scored by when it expires; this process refreshes its own members
before they do (``refresh``) and writes joins and leaves in order, as many as
are waiting in one round trip (``write``: never on a connection's path). A
change publishes a presence hint; every process then recounts (debounced: a
burst of joins is one frame) and offers its local viewers the new frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

from service.broker import channels
from service.broker.hints import PresenceHint, hint_encoder
from service.live.config import LiveSettings
from service.live.watches import Watch, Watches
from service.live.wire import PresenceFrame

log = logging.getLogger(__name__)


class Presence:
    def __init__(
        self, watches: Watches, redis: Any, prefix: str, settings: LiveSettings, process_id: str
    ) -> None:
        self._all = watches
        self._watches = watches.matches
        self.redis = redis
        self.prefix = prefix
        self.settings = settings
        self.process_id = process_id
        self._ops: asyncio.Queue[tuple[str, str, bool]] = asyncio.Queue()

    def join(self, match_id: str, role: str) -> str:
        """Count a connection as present (role: ``"0"``, ``"1"`` or ``"spectator"``).

        Never waits for Redis: the write is queued for the presence writer.
        """
        conn_id = f"{self.process_id}-{uuid.uuid4().hex[:10]}"
        watch = self._watches.setdefault(match_id, Watch())
        watch.local_members[conn_id] = role
        if self.redis is not None:
            self._ops.put_nowait((match_id, f"{conn_id}|{role}", True))
        return conn_id

    def leave(self, match_id: str, conn_id: str) -> None:
        watch = self._watches.get(match_id)
        if watch is None:
            return
        role = watch.local_members.pop(conn_id, None)
        if role is not None and self.redis is not None:
            self._ops.put_nowait((match_id, f"{conn_id}|{role}", False))
        self._all.forget_if_idle(match_id)

    async def leave_all(self) -> None:
        """This process stops: its connections no longer count as present."""
        with contextlib.suppress(Exception):
            async with self.redis.pipeline(transaction=False) as pipe:
                for match_id, watch in self._watches.items():
                    if watch.local_members:
                        pipe.zrem(
                            channels.presence_key(self.prefix, match_id),
                            *[f"{c}|{r}" for c, r in watch.local_members.items()],
                        )
                await pipe.execute()

    async def write(self) -> None:
        """Apply joins and leaves in order, as many as are waiting in one round trip."""
        while True:
            ops = [await self._ops.get()]
            while not self._ops.empty():
                ops.append(self._ops.get_nowait())
            expiry = self._expiry()
            ttl = int(self.settings.presence_ttl_s * 2) + 1
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for match_id, member, joined in ops:
                        key = channels.presence_key(self.prefix, match_id)
                        if joined:
                            pipe.zadd(key, {member: expiry})
                            pipe.expire(key, ttl)
                        else:
                            pipe.zrem(key, member)
                    for match_id in dict.fromkeys(op[0] for op in ops):
                        pipe.publish(
                            channels.match_channel(self.prefix, match_id),
                            hint_encoder.encode(PresenceHint(match_id=match_id)),
                        )
                    await pipe.execute()
            except Exception as exc:  # presence is a nicety: the refresher heals it later
                log.info("presence update of %d connections failed: %s", len(ops), exc)

    def _expiry(self) -> float:
        return time.time() + self.settings.presence_ttl_s

    def schedule_recount(self, match_id: str) -> None:
        watch = self._watches.get(match_id)
        if watch is None or (watch.recount is not None and not watch.recount.done()):
            return  # a recount is already due: a burst of joins becomes one frame
        watch.recount = asyncio.create_task(self._recount(match_id))

    async def _recount(self, match_id: str, debounce: bool = True) -> None:
        if debounce:
            await asyncio.sleep(self.settings.presence_debounce_s)
        key = channels.presence_key(self.prefix, match_id)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zremrangebyscore(key, "-inf", time.time())
                pipe.zrange(key, 0, -1)
                _, members = await pipe.execute()
        except Exception as exc:
            log.info("presence read for %s failed: %s", match_id, exc)
            return
        roles = [m.decode().rsplit("|", 1)[-1] for m in members]
        frame = PresenceFrame(
            players=("0" in roles, "1" in roles), spectators=roles.count("spectator")
        )
        watch = self._watches.get(match_id)
        if watch is None or frame == watch.presence:
            return
        watch.presence = frame
        for sub in list(watch.subs):
            sub.offer(frame)

    async def refresh(self) -> None:
        """Refresh this process's members before they expire; notice other processes' dead ones."""
        while True:
            await asyncio.sleep(self.settings.presence_ttl_s / 3)
            expiry = self._expiry()
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for match_id, watch in self._watches.items():
                        if watch.local_members:
                            key = channels.presence_key(self.prefix, match_id)
                            pipe.zadd(
                                key, {f"{c}|{r}": expiry for c, r in watch.local_members.items()}
                            )
                            pipe.expire(key, int(self.settings.presence_ttl_s * 2) + 1)
                    await pipe.execute()
            except Exception as exc:
                log.info("presence refresh failed: %s", exc)
            for match_id in list(self._watches):
                with contextlib.suppress(Exception):
                    await self._recount(match_id, debounce=False)
