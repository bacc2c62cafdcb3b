"""The tournament runner: results from the match log, the clock, and match creation.

It runs as a background task of each API process (``plugin``); one pass:

1. **Results.** In one transaction: take the runner's row
   ``tournament_runner('results')`` with ``FOR UPDATE SKIP LOCKED``, read the
   global match log after its position (``EventStore.read_all`` with
   ``types=match_ended, match_annulled``), turn each event of a tournament's
   match into ``RecordResult`` / ``AnnulResult`` on that tournament, and
   write the new position, all in the same transaction (ARCHITECTURE
   invariant 5). Why the row lock with SKIP LOCKED: with several API
   processes, exactly one applies a stretch of the log at a time and the
   others skip the pass instead of queueing behind it; a process killed
   mid-pass rolls back, and whoever takes the row next resumes from the
   last committed position, so every result is applied exactly once.
2. **The clock**, in the same transaction: arenas whose time is up end,
   tournaments whose scheduled start has come start.
3. **Matches** (after commit): every paired game whose match does not exist
   yet is started (``match_adapter.start_game``: idempotent by match id).

A pass runs when a hint arrives (a match ended here or, over Redis, in
another process) and at least every ``poll_s`` seconds without one, so a lost
hint costs at most that long. At start it catches up from the last position.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final

from psycopg_pool import AsyncConnectionPool

from schemas.tournaments import EndTournament, StartTournament, TournamentCommand
from service.errors import RuleError
from service.store import EventStore
from service.tournaments import match_adapter
from service.tournaments.service import FoldedTournament, Outcome, TournamentService

log = logging.getLogger("matcha.tournaments.runner")

BATCH: Final = 500
"""Match events applied per transaction at most."""

Starter = Callable[[match_adapter.GameToStart], Awaitable[bool]]


class TournamentRunner:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        events: EventStore,
        tournaments: TournamentService,
        start_game: Starter | None,
        *,
        wake: asyncio.Event,
        poll_s: float = 2.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.pool = pool
        self.events = events
        self.tournaments = tournaments
        self.start_game = start_game
        self.wake = wake
        self.poll_s = poll_s
        self.clock = clock
        self.passes = 0

    async def run_once(self) -> int | None:
        """One pass; the number of match events read (None: another process holds the row)."""
        outcomes: list[Outcome] = []
        pending: dict[str, FoldedTournament] = {}
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "SELECT position FROM tournament_runner WHERE name = 'results'"
                " FOR UPDATE SKIP LOCKED"
            )
            row = await cur.fetchone()
            if row is None:
                return None
            position = int(row[0])
            found = await self.events.read_all(
                after_position=position, limit=BATCH, types=match_adapter.RESULT_TYPES
            )
            owners: dict[str, str] = {}
            if found:
                cur = await conn.execute(
                    "SELECT match_id, tournament_id FROM tournament_games WHERE match_id = ANY(%s)",
                    ([e.match_id for e in found],),
                )
                owners = {m: t for m, t in await cur.fetchall()}
            for stored in found:
                tournament_id = owners.get(stored.match_id)
                command = match_adapter.command_for(stored, stored.recorded_at)
                if tournament_id is None or command is None:
                    continue
                outcome = await self._apply(conn, tournament_id, command, pending)
                if outcome is not None:
                    outcomes.append(outcome)
            outcomes += await self._clock(conn, pending)
            if found:
                await conn.execute(
                    "UPDATE tournament_runner SET position = %s, updated_at = now()"
                    " WHERE name = 'results'",
                    (found[-1].position,),
                )
        self.passes += 1
        for outcome in outcomes:
            await self.tournaments.committed(outcome)
        await self.start_missing()
        return len(found)

    async def _apply(
        self,
        conn: Any,
        tournament_id: str,
        command: TournamentCommand,
        pending: dict[str, FoldedTournament],
        *,
        quiet: bool = False,
    ) -> Outcome | None:
        try:
            return await self.tournaments.execute_in(
                conn, tournament_id, command, actor="runner", pending=pending
            )
        except RuleError as err:
            # decide refuses before anything is written, so the pass goes on:
            # e.g. a result for a game an annulment already settled, or a
            # scheduled start with too few players (tried again next pass).
            (log.debug if quiet else log.warning)(
                "tournament %s refused %s: %s", tournament_id, type(command).__name__, err.detail
            )
            return None

    async def _clock(self, conn: Any, pending: dict[str, FoldedTournament]) -> list[Outcome]:
        now = self.clock()
        cur = await conn.execute(
            """SELECT id, phase FROM tournaments
               WHERE (phase = 'running' AND format = 'arena' AND ends_at <= %s)
                  OR (phase = 'registering' AND starts_at <= %s)
               ORDER BY id""",
            (now, now),
        )
        outcomes = []
        for tournament_id, phase in await cur.fetchall():
            command: TournamentCommand = (
                EndTournament(at=now) if phase == "running" else StartTournament(at=now)
            )
            outcome = await self._apply(conn, tournament_id, command, pending, quiet=True)
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    async def start_missing(self) -> int:
        """Start the matches of paired games that have none yet."""
        if self.start_game is None:
            return 0
        async with self.pool.connection() as conn:
            games = await match_adapter.unstarted_games(conn)
        started = 0
        for game in games:
            try:
                started += await self.start_game(game)
            except Exception:
                log.exception("could not start the match of game %s", game.match_id)
        return started

    async def run_forever(self) -> None:
        """Passes until cancelled: right away, then on every hint or every ``poll_s``."""
        delay = self.poll_s
        while True:
            self.wake.clear()
            try:
                read = await self.run_once()
                delay = self.poll_s
                if read == BATCH:
                    continue  # more of the log is waiting
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("tournament runner pass failed; retrying")
                delay = min(delay * 2, 30.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), delay)
