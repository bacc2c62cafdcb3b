"""Reads that may lag go to a hot standby, while it is close enough behind; all else
to the primary.

A streaming standby replays the primary's WAL a moment later, and answers
reads meanwhile. Some reads do not mind that moment: a delayed spectator's
view, a replay, an archive, a leaderboard, a player's or a tournament's page.
Those may go to the standby (``connection(may_lag=True)``, or the pool-like
``lagging``), which takes their load off the one server that takes every
write. Everything else reads the primary, always: a command (it folds the
match to decide, and appends on top of what it read), and any read that must
see what the same client just wrote (read-your-writes: the answer to a
command, a seat's own view). The standby is never asked to be fresh: a caller
that needs fresh asks the primary.

**Bounded staleness, by LSN.** Every ``MATCHA_STANDBY_CHECK_S`` (1 s), in the
background and never in a read's way, the router notes where the primary's
WAL ends (``pg_current_wal_lsn()``, with the time it asked) and how far the
standby has replayed (``pg_last_wal_replay_lsn()``). The standby then holds
everything the primary held at the latest noted time whose position it has
replayed: its lag is how long ago that was (0 when it has replayed what the
primary had just now; growing while replay is paused or slow). Past
``MATCHA_STANDBY_MAX_LAG_S`` (5 s), or not in recovery (promoted, or another
server), or not answering within 1 s, or with the primary not answering
(the lag is then unknown), it is skipped: the reads go to the primary until a
check finds it close again. A read therefore sees data at most
``MAX_LAG_S + CHECK_S`` old.

Why not ``now() - pg_last_xact_replay_timestamp()``, the usual query: it is
the age of the last *commit* replayed, which on a quiet primary grows without
bound while the standby is current, and comparing the received and replayed
positions to tell "current" apart does not hold either (after a restart the
standby has received up to a page boundary its replay never reaches): the
router skipped a caught-up standby for good after a restart with it.

Not configured (``MATCHA_STANDBY_DATABASE_URL`` empty): every read goes to
the primary, and nothing else changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from service.store.db import check_idle_connection

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 1.0
"""A lag check that takes longer counts as a standby that is down."""
GET_STANDBY_CONNECTION_S = 0.5
"""A read waits this long for a standby connection, then reads the primary."""
MAX_MARKS = 10_000
"""The primary's positions kept at most (a bound of hours at a check a second)."""
STALE_VERDICT_CHECKS = 3
"""A verdict older than this many check intervals (the checker stalled) is not trusted."""

STANDBY_SQL = "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text"
PRIMARY_SQL = "SELECT pg_current_wal_lsn()::text"


def lsn(text: str | None) -> int | None:
    """A WAL position ``X/Y`` as a number (None stays None)."""
    if text is None:
        return None
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


def _float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


@dataclass(frozen=True, kw_only=True)
class StandbySettings:
    url: str = field(default_factory=lambda: os.environ.get("MATCHA_STANDBY_DATABASE_URL", ""))
    """The hot standby, as the app role; empty: none, every read on the primary."""
    max_lag_s: float = field(default_factory=lambda: _float("MATCHA_STANDBY_MAX_LAG_S", 5.0))
    """Further behind than this, the standby is skipped."""
    check_s: float = field(default_factory=lambda: _float("MATCHA_STANDBY_CHECK_S", 1.0))
    """How often the lag is measured."""
    pool_max: int = field(default_factory=lambda: int(_float("MATCHA_STANDBY_POOL_MAX", 10)))


@dataclass(frozen=True)
class Verdict:
    usable: bool
    why: str
    lag_s: float | None
    at: float
    """When it was measured (``time.monotonic`` at the start of the check)."""


def judge(in_recovery: bool, lag_s: float | None, max_lag_s: float) -> str:
    """Why the standby must be skipped, or "" when it may serve lagging reads."""
    if not in_recovery:
        return "not a standby (in recovery: no)"
    if lag_s is None:
        return "its lag is unknown (no position of the primary replayed yet)"
    if lag_s > max_lag_s:
        return f"{lag_s:.1f} s behind (more than {max_lag_s:g} s)"
    return ""


def lag_from_marks(marks: Sequence[tuple[float, int]], replayed: int, now: float) -> float | None:
    """Seconds since the latest noted (time, primary position) the standby has
    replayed; None when it replayed none of them."""
    covered = [at for at, position in marks if position <= replayed]
    return max(0.0, now - max(covered)) if covered else None


class ReadRouting:
    """Which pool a read uses: ``connection(may_lag=...)``."""

    def __init__(
        self,
        primary: AsyncConnectionPool,
        standby: AsyncConnectionPool | None = None,
        *,
        settings: StandbySettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.primary = primary
        self.standby = standby
        self.settings = settings or StandbySettings()
        self._clock = clock
        self.verdict = Verdict(False, "not checked yet", None, float("-inf"))
        self._checking: asyncio.Task[Verdict] | None = None
        self._check_conn: psycopg.AsyncConnection[Any] | None = None
        # (when, the primary's WAL end then), over the last lag bound and a little more
        self._marks: deque[tuple[float, int]] = deque(maxlen=MAX_MARKS)
        self._lagging: LaggingReads | None = None
        self.reads = {"primary": 0, "standby": 0}
        """Lagging reads served by each (a measure for tests and metrics)."""

    # ---- the decision -------------------------------------------------------

    def standby_usable(self) -> bool:
        """The last verdict, if recent; starts the next check when one is due."""
        if self.standby is None:
            return False
        age = self._clock() - self.verdict.at
        if age >= self.settings.check_s and self._checking is None:
            self._checking = asyncio.get_running_loop().create_task(self.refresh())
        return self.verdict.usable and age < STALE_VERDICT_CHECKS * self.settings.check_s

    @contextlib.asynccontextmanager
    async def connection(self, *, may_lag: bool) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection for one read (or, ``may_lag=False``, anything): the primary's,
        unless the read may lag and the standby is usable and lends one at once.
        Only the lending falls back to the primary: a read that fails on the standby
        fails (it may have done part of its work)."""
        async with contextlib.AsyncExitStack() as stack:
            conn: psycopg.AsyncConnection[Any] | None = None
            if may_lag and self.standby is not None and self.standby_usable():
                try:
                    lent = self.standby.connection(timeout=GET_STANDBY_CONNECTION_S)
                    conn = await stack.enter_async_context(lent)
                    self.reads["standby"] += 1
                except (PoolTimeout, psycopg.OperationalError) as error:
                    self._mark_down(f"lent no connection ({type(error).__name__}: {error})")
            if conn is None:
                if may_lag:
                    self.reads["primary"] += 1
                conn = await stack.enter_async_context(self.primary.connection())
            assert conn is not None
            yield conn

    @property
    def lagging(self) -> LaggingReads:
        """A stand-in for a pool (its ``connection()``) whose reads may lag: what a
        read-only ``EventStore`` for replays, or a route's lagging reads, is given."""
        if self._lagging is None:
            self._lagging = LaggingReads(self)
        return self._lagging

    def pool_that_may_lag(self) -> Any:
        """What a read that may lag is given as its pool: ``lagging`` when a standby
        is configured, else the primary's pool itself."""
        return self.lagging if self.standby is not None else self.primary

    # ---- measuring ----------------------------------------------------------

    async def refresh(self) -> Verdict:
        """Measure the standby's lag now."""
        started = self._clock()
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_S):
                async with self.primary.connection(timeout=CHECK_TIMEOUT_S) as conn:
                    cur = await conn.execute(PRIMARY_SQL)
                    row = await cur.fetchone()
                primary_end = lsn(row[0] if row else None)
                in_recovery, replayed = await self._measure()
            lag = self._lag(started, primary_end, replayed) if in_recovery else None
            why = judge(in_recovery, lag, self.settings.max_lag_s)
            verdict = Verdict(not why, why or "ok", lag, started)
        except (TimeoutError, PoolTimeout, psycopg.Error, OSError) as error:
            await self._drop_check_connection()
            verdict = Verdict(False, f"down ({type(error).__name__}: {error})", None, started)
        finally:
            self._checking = None
        if verdict.at < self.verdict.at:
            return self.verdict  # news from before a failed lending: that is newer
        if verdict.usable != self.verdict.usable:
            log.warning("standby reads %s: %s", "on" if verdict.usable else "off", verdict.why)
        self.verdict = verdict
        return verdict

    def _lag(self, started: float, primary_end: int | None, replayed: int | None) -> float | None:
        marks = self._marks
        if primary_end is not None:
            marks.append((started, primary_end))
        while (
            len(marks) > 1
            and started - marks[1][0] > self.settings.max_lag_s + 2 * self.settings.check_s
        ):
            marks.popleft()  # the oldest kept is older than the bound: enough to tell
        now = self._clock()
        lag = None if replayed is None else lag_from_marks(marks, replayed, now)
        if lag is None and marks and now - marks[0][0] > self.settings.max_lag_s:
            return now - marks[0][0]  # behind all of the bound's marks: at least this
        return lag

    async def _measure(self) -> tuple[bool, int | None]:
        if self._check_conn is None or self._check_conn.closed:
            self._check_conn = await psycopg.AsyncConnection.connect(
                self.settings.url, autocommit=True, connect_timeout=1
            )
        cur = await self._check_conn.execute(STANDBY_SQL)
        row = await cur.fetchone()
        assert row is not None
        return bool(row[0]), lsn(row[1])

    def _mark_down(self, why: str) -> None:
        log.warning("standby reads off: %s", why)
        self.verdict = Verdict(False, why, None, self._clock())

    async def _drop_check_connection(self) -> None:
        conn, self._check_conn = self._check_conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def close(self) -> None:
        if self._checking is not None:
            self._checking.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._checking
        await self._drop_check_connection()
        if self.standby is not None:
            await self.standby.close(timeout=2.0)


class LaggingReads(AsyncConnectionPool):
    """A pool, as its users see one, for reads that may lag: ``connection()`` lends
    the standby's when usable, else the primary's (``ReadRouting.connection``).

    A real ``AsyncConnectionPool`` that is never opened (it holds no connection of
    its own), so that code typed for a pool, a route's ``pool`` parameter that the
    framework checks by type among them, takes it as one. Only ``connection()``
    is meant: a read that wants anything else of a pool asks the primary's."""

    def __init__(self, routing: ReadRouting) -> None:
        super().__init__(
            routing.primary.conninfo, min_size=1, max_size=1, open=False, name="matcha-lagging"
        )
        self.routing = routing

    @contextlib.asynccontextmanager
    async def connection(
        self, timeout: float | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        async with self.routing.connection(may_lag=True) as conn:
            yield conn


async def open_read_routing(
    primary: AsyncConnectionPool, settings: StandbySettings | None = None
) -> ReadRouting:
    """The routing for this process: with a standby pool when one is configured
    (opened without waiting: a standby that is down at start only means reads on
    the primary), and a first lag check done before it returns."""
    settings = settings or StandbySettings()
    if not settings.url:
        return ReadRouting(primary, None, settings=settings)
    standby = AsyncConnectionPool(
        settings.url,
        min_size=1,
        max_size=settings.pool_max,
        kwargs={"autocommit": True},
        # a connection the standby closed (a restart) is noticed before it is lent
        check=check_idle_connection,
        open=False,
        name="matcha-standby",
        timeout=GET_STANDBY_CONNECTION_S,
    )
    await standby.open(wait=False)
    routing = ReadRouting(primary, standby, settings=settings)
    await routing.refresh()
    return routing


__all__ = [
    "LaggingReads",
    "ReadRouting",
    "StandbySettings",
    "Verdict",
    "judge",
    "open_read_routing",
]
