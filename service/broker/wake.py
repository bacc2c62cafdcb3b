"""After a commit, wake the workers that have work: the match core's after-commit
hooks that publish the workers' hints (each carries only the match id).

* ``projections_hint_hook``: a commit that ends a match or follows its end (a
  dispute, a decision, an annulment) changes its archive and maybe its
  ladder's ratings: the projection runners (``workers.projections``) are woken
  on ``channels.projections_channel``. Moves of a match being played change
  neither, and wake nobody.
* ``clocks_hint_hook``: any commit of a timed match may set an earlier deadline:
  the clock sweepers (``workers.clocks``) read the earliest again.

Best effort and bounded: a hint that cannot go out within its timeout is
dropped (the workers read the log within their poll interval anyway); it never
fails the committed command.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from service.broker.channels import clocks_channel, projections_channel
from service.matches import AfterCommit, Committed

log = logging.getLogger("matcha.broker.wake")

PROJECTIONS_HINT_TIMEOUT_S = 1.0
CLOCKS_HINT_TIMEOUT_S = 0.5


def wakes_projections(committed: Committed) -> bool:
    """Whether these rows are work for a projection runner: the match is over after them.

    Every event after play (the end, a dispute, its decision, an annulment) leaves
    the match over, and no move of a match being played does; so does any kind of
    after-the-end event added later."""
    return committed.over


async def hint(redis: Any, prefix: str, match_id: str) -> None:
    """Publish the projections' hint (``redis``: an async client). Raises what Redis raises."""
    await redis.publish(projections_channel(prefix), match_id)


def projections_hint_hook(redis: Any, prefix: str) -> AfterCommit:
    """The hook that wakes the projection runners (``redis``: the API's async client)."""

    async def hook(committed: Committed) -> None:
        if not wakes_projections(committed):
            return
        match_id = committed.match_id
        try:
            await asyncio.wait_for(hint(redis, prefix, match_id), PROJECTIONS_HINT_TIMEOUT_S)
        except Exception as exc:  # best effort: never fail a committed command
            log.info(
                "no projection hint for %s (%s: %s); the runners poll the log",
                match_id,
                type(exc).__name__,
                exc,
            )

    return hook


def clocks_hint_hook(redis: Any, prefix: str) -> AfterCommit:
    """The hook that wakes the clock sweepers after a commit of a timed match."""

    async def hook(committed: Committed) -> None:
        if not committed.facts.terms.clock:
            return
        try:
            await asyncio.wait_for(
                redis.publish(clocks_channel(prefix), committed.match_id), CLOCKS_HINT_TIMEOUT_S
            )
        except Exception as exc:  # never fail a committed command
            log.info("no clock hint for %s (%s)", committed.match_id, type(exc).__name__)

    return hook


__all__ = ["clocks_hint_hook", "hint", "projections_hint_hook", "wakes_projections"]
