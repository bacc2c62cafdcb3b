"""The clock sweeper: time out every seat whose clock ran out, exactly once.

The deadlines are the ``match_deadlines`` projection, written in the same
transaction as every append of a timed match (``service.matches.deadlines``).
Every ``matcha worker`` runs one sweeper (a thread with its own event loop,
its own pool and its own ``MatchCore``, signing like the API). A sweep:

1. claims the rows that are due by the core's clock (``FOR UPDATE SKIP LOCKED``, so two workers
   never claim the same row, then a short lease written in that transaction,
   so no lock is held while the time-out is appended: the append's own
   deadline statement touches the same row);
2. times each seat out through ``service.matches.clocks.time_out`` at the row's version
   (the engine checks the clock ran out; the append at that version turns a
   duplicate into a ``VersionConflict``, never a second result);
3. a move that raced in first left a newer row (a new deadline): nothing is
   appended. A worker killed mid-sweep leaves its lease to run out
   (``LEASE_S``); another worker's sweep takes the row then.

Between sweeps the sweeper sleeps until the earliest deadline; a hint on
``<prefix>:clocks`` (published after each commit of a timed match,
``service.broker.wake.clocks_hint_hook``) wakes it to read the earliest deadline again, since a
command may have set an earlier one. ``FALLBACK_WAIT_S`` bounds a sleep only
in case a hint was lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from service.broker.publish import Publisher
from service.broker.pubsub import Broker
from service.broker.wake import projections_hint_hook
from service.errors import MatchaError, VersionConflict
from service.evidence.service import load_service_evidence
from service.matches import MatchCore
from service.matches.clocks import time_out
from service.store import EventStore
from service.store.db import open_pool

log = logging.getLogger("matcha.workers.clocks")

LEASE_S = 5.0
"""How long a claimed deadline stays claimed: a worker killed mid-sweep delays its
time-outs by at most this much (a sweep of a hundred rows takes well under it)."""
RETRY_S = 0.05
"""A time-out the engine found early (the database's clock ahead of this process's)
is tried again this soon."""
BATCH = 200
"""Deadlines claimed per sweep."""
CONCURRENCY = 16
"""Time-outs appended at once by one sweeper."""
FALLBACK_WAIT_S = 30.0
"""The longest sleep, in case a hint was lost."""
HINT_COALESCE_S = 0.02
"""After a hint, wait this long before reading the earliest deadline again: a busy
service's hints (one per commit of a timed match) then cost one read per 20 ms."""
FAULT_KILL_IN_SWEEP = "MATCHA_FAULT_KILL_IN_SWEEP"
"""Fault injection for tests: set to 1, the worker kills itself (SIGKILL) after it
claimed a deadline and before it appends the time-out. Never set in production."""

_CLAIM = """
UPDATE match_deadlines d
   SET lease_until = %(now)s::timestamptz + make_interval(secs => %(lease)s)
  FROM (SELECT match_id FROM match_deadlines
         WHERE due_at <= %(now)s AND lease_until < %(now)s
         ORDER BY due_at LIMIT %(batch)s
           FOR UPDATE SKIP LOCKED) due
 WHERE d.match_id = due.match_id
RETURNING d.match_id, d.seat, d.due_at, d.version
"""

_RELEASE = """
UPDATE match_deadlines SET lease_until = %s::timestamptz + make_interval(secs => %s)
 WHERE match_id = %s AND version = %s
"""

_FORGET = "DELETE FROM match_deadlines WHERE match_id = %s AND version = %s"

_NEXT = """
SELECT extract(epoch FROM min(t) - %s::timestamptz)
  FROM (SELECT greatest(due_at, lease_until) AS t FROM match_deadlines
         ORDER BY due_at LIMIT 256) AS earliest
"""
# The earliest deadlines by the due_at index (a few rows, whatever the table's
# size): more than a whole claimed batch, so a dead worker's leased batch never
# hides a due row behind it.


class Sweeper:
    """Claims due deadlines and times their seats out through the match core."""

    def __init__(
        self,
        core: MatchCore,
        pool: AsyncConnectionPool,
        *,
        lease_s: float = LEASE_S,
        batch: int = BATCH,
        concurrency: int = CONCURRENCY,
        before_time_out: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.core = core
        self.pool = pool
        self.lease_s = lease_s
        self.batch = batch
        self._limit = asyncio.Semaphore(concurrency)
        self.before_time_out = before_time_out
        """A test's fault injection: awaited before each time-out is appended."""
        self.timed_out = 0
        self.lateness_s: list[float] = []
        """Per time-out this sweeper appended: from the deadline to the append's commit."""
        self.cpu_s = 0.0
        """Process CPU seconds spent sweeping (``time.process_time`` around each sweep)."""

    async def sweep(self) -> int:
        """One sweep: every due deadline claimed now; how many seats were timed out."""
        started = time.process_time()
        try:
            async with self.pool.connection() as conn, conn.transaction():
                cur = await conn.execute(
                    _CLAIM, {"now": self.core.now(), "lease": self.lease_s, "batch": self.batch}
                )
                rows = await cur.fetchall()
            done = await asyncio.gather(*(self._one(*row) for row in rows))
            return sum(done)
        finally:
            self.cpu_s += time.process_time() - started

    async def _one(self, match_id: str, seat: int, due_at: datetime, version: int) -> int:
        async with self._limit:
            if self.before_time_out is not None:
                await self.before_time_out(match_id)
            try:
                accepted = await time_out(
                    self.core,
                    match_id,
                    1 if seat == 1 else 0,
                    expected_version=version,
                )
            except VersionConflict:
                return 0  # a move came first: its append wrote the match's next deadline
            except MatchaError as refused:
                if refused.code == "time_not_expired":  # clocks apart by a hair: soon again
                    await self._execute(_RELEASE, (self.core.now(), RETRY_S, match_id, version))
                else:  # over already (resigned, annulled): the row is stale
                    await self._execute(_FORGET, (match_id, version))
                return 0
            del accepted
            self.lateness_s.append((self.core.now() - due_at).total_seconds())
            self.timed_out += 1
            return 1

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(sql, params)

    async def next_in(self) -> float | None:
        """Seconds until the earliest deadline (or lease) runs out; None: no deadline."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(_NEXT, (self.core.now(),))
            row = await cur.fetchone()
        return None if row is None or row[0] is None else max(0.0, float(row[0]))

    async def run(self, wake: asyncio.Event, stop: threading.Event) -> None:
        """Sweep, sleep until the next deadline or a hint, until ``stop``."""
        backoff = 0.1
        while not stop.is_set():
            try:
                while await self.sweep() >= self.batch:
                    pass  # a full batch: more may be due
                wait = await self.next_in()
                backoff = 0.1
            except Exception:  # the database went away: try again, never exit
                log.warning("clock sweep failed; trying again in %.1f s", backoff, exc_info=True)
                wait, backoff = backoff, min(backoff * 2, 5.0)
            wait = FALLBACK_WAIT_S if wait is None else min(wait, FALLBACK_WAIT_S)
            try:
                await asyncio.wait_for(wake.wait(), timeout=wait)
            except TimeoutError:
                continue  # a deadline is due (or the fallback): sweep
            wake.clear()
            await asyncio.sleep(HINT_COALESCE_S)  # let a burst of hints land as one


# -- in ``matcha worker`` ------------------------------------------------------------


class SweeperThread:
    """The sweeper of one worker: a daemon thread with its own loop and pool."""

    def __init__(
        self, database_url: str, redis_url: str, prefix: str, stop: threading.Event
    ) -> None:
        self.database_url = database_url
        self.redis_url = redis_url
        self.prefix = prefix
        self.stop = stop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self.sweeper: Sweeper | None = None
        self.thread = threading.Thread(target=self._main, name="clock-sweeper", daemon=True)

    def start(self) -> SweeperThread:
        self.thread.start()
        return self

    def wake(self) -> None:
        """From any thread (the hint listener's): read the earliest deadline again."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(wake.set)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        pool = await open_pool(self.database_url, min_size=1, max_size=CONCURRENCY + 2)
        # The process's broker: a plain client on one Redis, sharded hints on a
        # cluster URL (where Redis.from_url refuses the redis+cluster:// scheme).
        broker = Broker(self.redis_url, socket_connect_timeout=1.0)
        redis = broker.redis
        try:
            store = EventStore(pool)
            _sign_like_the_api(store)
            core = MatchCore(store)

            async def load_log(match_id: str) -> Any:
                return await store.load(match_id)

            # What the API's hooks do after a commit that a time-out needs too:
            # the live hint (players and spectators see the result) and the
            # projections' hint (ratings, archives).
            core.after_commit.append(Publisher(redis, self.prefix, load_log=load_log))
            core.after_commit.append(projections_hint_hook(redis, self.prefix))
            self.sweeper = Sweeper(core, pool, before_time_out=_fault_hook())
            stopping = asyncio.create_task(asyncio.to_thread(self.stop.wait))
            running = asyncio.create_task(self.sweeper.run(self._wake, self.stop))
            await asyncio.wait({stopping, running}, return_when=asyncio.FIRST_COMPLETED)
            self._wake.set()
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        finally:
            await broker.aclose()
            await pool.close()


def _fault_hook() -> Callable[[str], Awaitable[None]] | None:
    if os.environ.get(FAULT_KILL_IN_SWEEP) != "1":
        return None

    async def die(match_id: str) -> None:
        log.warning(
            "%s=1: killing this worker mid-sweep (claimed %s)", FAULT_KILL_IN_SWEEP, match_id
        )
        os.kill(os.getpid(), signal.SIGKILL)

    return die


def _sign_like_the_api(store: Any) -> None:
    """The worker's appends are signed with the service's key, as the API's are."""
    try:
        evidence = load_service_evidence()
        store.signer = evidence.signer
        store.verifier = evidence.keyring
    except Exception:  # no key reachable: the time-outs are appended unsigned (and logged)
        log.warning("the clock sweeper found no signing key; its appends are unsigned")


__all__ = ["Sweeper", "SweeperThread"]
