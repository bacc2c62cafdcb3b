"""One tournament command, end to end, in one transaction.

1. lock the tournament's row in ``tournaments`` (``FOR UPDATE``): commands of
   one tournament (an organiser's, a player's, the results runner's) queue
   here, so each is decided on the state the previous one committed;
2. fold the tournament: this process's cached fold if its version and head
   hash are the row's, else brought forward with the events after it;
3. ``decide`` (pure; raises ``RuleError``);
4. append the events (``store.append``) and write the projection rows that
   changed, in the same transaction;
5. after commit, the hooks: live hints, and the matches of new pairings
   (``service.tournaments.plugin``). Best effort: the log is the truth, and
   the runner's catch-up starts any match a lost hook did not.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from schemas.tournaments import TournamentCommand
from service.store.chain import GENESIS_HASH
from service.tournaments import projection, store
from service.tournaments.decide import step
from service.tournaments.evolve import apply, fold
from service.tournaments.state import TournamentState, freeze, thaw
from service.tournaments.store import StoredTournamentEvent

log = logging.getLogger("matcha.tournaments")

CACHE_SIZE = 1_000


class FoldedTournament(msgspec.Struct, frozen=True, kw_only=True):
    state: TournamentState
    rows: projection.Rows | None
    head: bytes


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What a command did: the state after it and the events it appended."""

    tournament_id: str
    state: TournamentState
    stored: tuple[StoredTournamentEvent, ...]
    folded: FoldedTournament | None = None


AfterCommit = Callable[[Outcome], Awaitable[None]]


class TournamentService:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self.after_commit: list[AfterCommit] = []
        # tournament id -> its fold at a committed (version, head hash). Only
        # ever filled after a commit, so an entry is a committed truth.
        self._folds: OrderedDict[str, FoldedTournament] = OrderedDict()

    async def execute(
        self, tournament_id: str, command: TournamentCommand, *, actor: str
    ) -> Outcome:
        """Decide and append ``command`` in a transaction of its own, then run the hooks."""
        async with self.pool.connection() as conn, conn.transaction():
            outcome = await self.execute_in(conn, tournament_id, command, actor=actor)
        await self.committed(outcome)
        return outcome

    async def execute_in(
        self,
        conn: AsyncConnection[Any],
        tournament_id: str,
        command: TournamentCommand,
        *,
        actor: str,
        pending: dict[str, FoldedTournament] | None = None,
    ) -> Outcome:
        """Decide and append inside the caller's transaction; the caller commits
        and then calls ``committed(outcome)``.

        ``pending``: folds this transaction has made and not committed yet (the
        runner applies many results in one); a command on the same tournament
        then starts from there instead of folding the uncommitted events again.
        """
        folded = await self._locked_fold(conn, tournament_id, pending)
        new_state, events = step(folded.state, command)
        if not events:
            return Outcome(tournament_id=tournament_id, state=folded.state, stored=())
        stored = await store.append(
            conn, tournament_id, folded.state.version, events, actor=actor, prev_hash=folded.head
        )
        rows = projection.rows_of(new_state)
        await projection.write(conn, folded.rows, rows, stored[-1].hash)
        after = FoldedTournament(state=new_state, rows=rows, head=stored[-1].hash)
        if pending is not None:
            pending[tournament_id] = after
        return Outcome(
            tournament_id=tournament_id, state=new_state, stored=tuple(stored), folded=after
        )

    async def committed(self, outcome: Outcome) -> None:
        """The outcome's transaction committed: remember its fold, run the hooks."""
        if outcome.folded is not None:
            self._remember(outcome.tournament_id, outcome.folded)
        if not outcome.stored:
            return
        for hook in self.after_commit:
            try:
                await hook(outcome)
            except Exception:  # a hint must never undo a committed command
                log.exception("tournament after-commit hook %r failed", hook)

    async def current(self, tournament_id: str) -> TournamentState:
        """The tournament as committed now (no lock)."""
        async with self.pool.connection() as conn:
            events = await store.load(conn, tournament_id)
        return fold(e.event for e in events)

    async def _locked_fold(
        self,
        conn: AsyncConnection[Any],
        tournament_id: str,
        pending: dict[str, FoldedTournament] | None = None,
    ) -> FoldedTournament:
        # The row lock: see the module docstring (step 1). A tournament being
        # created has no row yet; the unique (tournament_id, version) key then
        # turns a racing second creation into a VersionConflict.
        cur = await conn.execute(
            "SELECT version, head FROM tournaments WHERE id = %s FOR UPDATE", (tournament_id,)
        )
        row = await cur.fetchone()
        if row is None:
            version, head = 0, GENESIS_HASH
        else:
            version, head = int(row[0]), bytes(row[1])
        cached = (pending or {}).get(tournament_id) or self._folds.get(tournament_id)
        if cached is not None and cached.state.version == version and cached.head == head:
            return cached
        if cached is not None and cached.state.version < version:
            newer = await store.load(conn, tournament_id, after=cached.state.version)
            if newer and newer[0].prev_hash == cached.head and newer[-1].hash == head:
                t = thaw(cached.state)
                for e in newer:
                    apply(t, e.event)
                state = freeze(t)
                return FoldedTournament(state=state, rows=projection.rows_of(state), head=head)
        events = await store.load(conn, tournament_id)
        state = fold(e.event for e in events)
        rows = projection.rows_of(state) if events else None
        return FoldedTournament(state=state, rows=rows, head=events[-1].hash if events else head)

    def _remember(self, tournament_id: str, folded: FoldedTournament) -> None:
        self._folds[tournament_id] = folded
        self._folds.move_to_end(tournament_id)
        while len(self._folds) > CACHE_SIZE:
            self._folds.popitem(last=False)
