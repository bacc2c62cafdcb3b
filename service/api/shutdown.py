"""Bounded shutdown: every step of closing the app gets a deadline.

A close that talks to a server (Redis's ``aclose``, the pool's ``close``
waiting for its workers and connections) can wait forever when that server
stopped answering without closing the socket: the app would never exit,
``matcha run`` would have to kill it, and a test's teardown would hang until
pytest-timeout. Each step here is given its own bound; a step that overruns
is abandoned (cancelled, logged) and the next one still runs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

log = logging.getLogger("matcha.api")

STEP_TIMEOUT_S: Final = 3.0
"""The longest one closing step may take (a healthy close takes milliseconds)."""

CloseStep = tuple[str, Callable[[], Awaitable[object]]]
"""A name for the log, and the coroutine function that closes it."""


async def bounded(name: str, close: Callable[[], Awaitable[object]], timeout_s: float) -> bool:
    """Run one closing step for at most ``timeout_s``; True when it finished in time.

    A step that fails or overruns is logged and given up: shutting down must go on.
    """
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout_s):
            await close()
    except TimeoutError:
        log.warning("shutdown: %s did not close within %.1f s; abandoned", name, timeout_s)
        return False
    except Exception as exc:  # a close that fails has still released what it could
        log.warning("shutdown: closing %s failed (%s: %s)", name, type(exc).__name__, exc)
        return False
    log.debug("shutdown: %s closed in %.3f s", name, time.monotonic() - started)
    return True


async def close_all(steps: Sequence[CloseStep], *, timeout_s: float = STEP_TIMEOUT_S) -> list[str]:
    """Run the steps in order, each bounded; return the names of those that did not finish."""
    late: list[str] = []
    for name, close in steps:
        if not await bounded(name, close, timeout_s):
            late.append(name)
    return late
