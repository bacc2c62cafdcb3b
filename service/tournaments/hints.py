"""Hints between processes: "a tournament moved", "a match ended".

Within a process, ``Hints`` wakes whoever waits (the runner, live standings
streams). Across processes the same hints travel over Redis pub/sub,
``<prefix>:tournaments:moved`` (the tournament id) and
``<prefix>:tournaments:results``. They are only hints: every waiter also
looks for itself every few seconds, so a lost message, or Redis being down,
delays things by that much and loses nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Any

log = logging.getLogger("matcha.tournaments.hints")


def moved_channel(prefix: str) -> str:
    return f"{prefix}:tournaments:moved"


def results_channel(prefix: str) -> str:
    return f"{prefix}:tournaments:results"


class Hints:
    """This process's waiters, and the Redis channels that reach the others."""

    def __init__(self, redis: Any, prefix: str) -> None:
        self.redis = redis
        self.prefix = prefix
        self.results = asyncio.Event()
        """Set when a match ended somewhere: the runner should look at the log."""
        self._moved: dict[str, asyncio.Event] = {}

    # -- local ---------------------------------------------------------------------

    def waiter(self, tournament_id: str) -> asyncio.Event:
        """The event set when ``tournament_id`` moves (shared by its streams here)."""
        return self._moved.setdefault(tournament_id, asyncio.Event())

    def _wake(self, tournament_id: str) -> None:
        found = self._moved.pop(tournament_id, None)
        if found is not None:
            found.set()

    # -- both --------------------------------------------------------------------------

    async def tournament_moved(self, tournament_id: str) -> None:
        self._wake(tournament_id)
        await self._publish(moved_channel(self.prefix), tournament_id)

    async def match_ended(self) -> None:
        self.results.set()
        await self._publish(results_channel(self.prefix), "1")

    async def _publish(self, channel: str, data: str) -> None:
        if self.redis is None:
            return
        try:
            await asyncio.wait_for(self.redis.publish(channel, data), 2.0)
        except Exception as exc:  # a hint: the pollers catch up
            log.debug("tournament hint on %s not sent (%s)", channel, exc)

    # -- the subscription --------------------------------------------------------------

    async def listen(self) -> None:
        """Forward the other processes' hints to this one's waiters, forever."""
        if self.redis is None:
            return
        delay = 0.2
        channels = (moved_channel(self.prefix), results_channel(self.prefix))
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.subscribe(*channels)
                delay = 0.2
                while True:
                    msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=10.0)
                    if msg is None:
                        await pubsub.ping()
                        continue
                    if msg["type"] != "message":
                        continue
                    channel = msg["channel"]
                    name = channel.decode() if isinstance(channel, bytes) else channel
                    data = msg["data"]
                    text = data.decode() if isinstance(data, bytes) else str(data)
                    if name == channels[0]:
                        self._wake(text)
                    else:
                        self.results.set()
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                raise
            except Exception as exc:
                log.info("tournament hint subscription lost (%s); retrying", exc)
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                await asyncio.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 5.0)
