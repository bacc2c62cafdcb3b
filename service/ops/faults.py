"""Fault injection for tests (docs/operations.md); never set in production."""

from __future__ import annotations

import logging
import os
import signal

from service.matches import AfterCommit, Committed

log = logging.getLogger("matcha.ops.faults")

FAULT_KILL_AFTER_COMMIT = "MATCHA_FAULT_KILL_AFTER_COMMIT"
"""An event type: the API process kills itself (SIGKILL) right after committing
events of that type, before any after-commit hook runs."""


def kill_after_commit_hook() -> AfterCommit | None:
    """The hook ``FAULT_KILL_AFTER_COMMIT`` asks for (None: the variable is unset).
    Registered first, so that no other hook runs before it."""
    event_type = os.environ.get(FAULT_KILL_AFTER_COMMIT, "")
    if not event_type:
        return None

    async def hook(committed: Committed) -> None:
        if any(e.type == event_type for e in committed.stored):
            log.warning(
                "%s=%s: killing this process after the commit of %s",
                FAULT_KILL_AFTER_COMMIT,
                event_type,
                committed.match_id,
            )
            os.kill(os.getpid(), signal.SIGKILL)

    return hook
