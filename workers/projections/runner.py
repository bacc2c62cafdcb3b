"""A projection runner: follow the log from the last position applied, forever.

One pass, in one transaction on the runner's own connection:

1. take the runner's row in ``projection_positions`` (``FOR UPDATE SKIP
   LOCKED``: another worker's pass holding it means this one skips);
2. read the log after that position, up to a committed high-water mark
   (``matchlog.committed_high``: nothing that commits late is skipped);
3. apply a stretch of it (the projection's ``step``) and write the position
   reached, in that same transaction.

A runner catches up at start, after every wake-up (a hint over Redis that
something ended: ``wake``) and every ``poll_s`` seconds without one, so a lost
hint costs at most ``poll_s``; a broker that restarts costs nothing, since
the log is read from PostgreSQL. A database error ends the pass (its
transaction rolls back: nothing half applied) and the runner tries again with
backoff, never exiting. ``sweep`` runs at start and every ``sweep_every_s``: a
backstop for what a position cannot show (a build that failed on a bad log,
history from before the runners existed).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, NamedTuple, Protocol

import psycopg
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_when_event_set,
    wait_exponential,
    wait_random,
)

from service.store import matchlog
from service.store.ops import run
from workers.projections import positions

log = logging.getLogger("matcha.workers.projections")

POLL_S = 2.0
"""Longest a runner waits without a hint before it looks at the log anyway."""
SWEEP_EVERY_S = 300.0


class Step(NamedTuple):
    """What one pass applied."""

    position: int
    """The last position it applied (the pass's high-water mark when it took everything)."""
    applied: int
    """Items it changed: archives built, ladders updated, summaries repaired."""


class Projection(Protocol):
    name: str

    def step(self, conn: psycopg.Connection[Any], after: int, high: int) -> Step:
        """Apply a stretch of ``(after, high]``, inside the pass's transaction."""
        ...

    def sweep(self, conn: psycopg.Connection[Any]) -> int:
        """The backstop (outside any pass); what it repaired."""
        ...


class Runner:
    """Runs one ``Projection`` (``run`` in a thread of ``matcha worker``)."""

    def __init__(
        self,
        projection: Projection,
        database_url: str,
        *,
        stop: threading.Event,
        poll_s: float = POLL_S,
        sweep_at_start: bool = True,
        sweep_every_s: float | None = SWEEP_EVERY_S,
        hinted: bool = True,
    ) -> None:
        self.projection = projection
        self.name = projection.name
        self.database_url = database_url
        self.stop = stop
        self.poll_s = poll_s
        self.sweep_at_start = sweep_at_start
        self.sweep_every_s = sweep_every_s
        """None: no sweep after the one at start."""
        self.hinted = hinted
        """Woken by the hints (archives, ratings); else only its poll (summaries)."""
        self.wake = threading.Event()
        """Set by a hint (or a broker reconnect): catch up now."""
        self.passes = 0
        """Passes that applied a stretch of the log."""
        self.applied = 0
        self.cycles = 0
        """Catch-ups tried (at start, on each wake-up and each poll)."""
        self._conn: psycopg.Connection[Any] | None = None
        self._seen = -1
        """The log's sequence value when this runner last caught up to its end."""
        self._swept_at: float | None = None
        self._retrying = Retrying(
            retry=retry_if_exception_type(Exception),
            wait=wait_exponential(multiplier=0.2, max=10.0) + wait_random(0, 0.2),
            stop=stop_when_event_set(stop),
            sleep=self._pause,
            before_sleep=self._log_retry,
        )

    # -- one pass ---------------------------------------------------------------------

    def connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            conn = self._conn = psycopg.connect(
                self.database_url, autocommit=True, application_name=f"matcha-{self.name}"
            )
            positions.ensure(conn, self.name)
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def catch_up(self) -> int:
        """Apply everything committed so far (pass after pass); what was applied.

        Returns early when another worker's pass holds the row (it is applying
        this stretch) or when the process stops. Raises on database errors.
        """
        conn = self.connection()
        seen = run(conn, matchlog.last_position())
        if seen == self._seen:
            return 0  # nothing was appended since this runner reached the end
        high = run(conn, matchlog.committed_high())
        total = 0
        while not self.stop.is_set():
            with conn.transaction():
                after = positions.claim(conn, self.name)
                if after is None:
                    return total
                if after >= high:
                    self._seen = seen
                    return total
                began = time.perf_counter()
                step = self.projection.step(conn, after, high)
                positions.advance(conn, self.name, step.position)
            log.debug(
                "%s: a pass applied %d up to %d in %.1f ms",
                self.name,
                step.applied,
                step.position,
                (time.perf_counter() - began) * 1000,
            )
            self.passes += 1
            self.applied += step.applied
            total += step.applied
            if step.position >= high:
                self._seen = seen
                return total
        return total

    def sweep(self) -> int:
        self._swept_at = time.monotonic()
        repaired = self.projection.sweep(self.connection())
        if repaired:
            log.warning(
                "%s: the sweep repaired %d item(s) the log position missed", self.name, repaired
            )
        return repaired

    def _cycle(self) -> None:
        self.cycles += 1
        self.catch_up()
        if self._swept_at is None:
            due = self.sweep_at_start
            self._swept_at = time.monotonic()
        else:
            due = (
                self.sweep_every_s is not None
                and time.monotonic() - self._swept_at >= self.sweep_every_s
            )
        if due and not self.stop.is_set():
            self.sweep()

    # -- forever ----------------------------------------------------------------------

    def run(self) -> None:
        """Catch up now, then after every wake-up or ``poll_s``; never exits before ``stop``."""
        log.info("%s projection runner started (poll %.1f s)", self.name, self.poll_s)
        try:
            while not self.stop.is_set():
                try:
                    self._retrying(self._cycle)
                except RetryError:
                    break  # stopping while it waited to try again
                self.wake.wait(self.poll_s)
                self.wake.clear()
        finally:
            self.close()
            log.info("%s projection runner stopped", self.name)

    def _pause(self, seconds: float) -> None:
        self.stop.wait(seconds)

    def _log_retry(self, state: RetryCallState) -> None:
        self.close()  # a broken connection is made anew on the next try
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "%s: pass failed (%s: %s); again in %.1f s",
            self.name,
            type(error).__name__,
            error,
            wait,
        )


def start(runner: Runner) -> threading.Thread:
    """``runner.run`` in a daemon thread (the process may end mid-pass: it rolls back)."""
    thread = threading.Thread(target=runner.run, name=f"projection-{runner.name}", daemon=True)
    thread.start()
    return thread
