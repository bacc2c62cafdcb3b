"""Playing the bot's seat of practice matches, off every request's path.

The after-commit hook only notes that a match moved (no I/O, no search): the
move itself is made by a background task per match, at most ``max_matches``
of them per process, each thinking in a worker thread while holding one of
``thinkers`` slots, so the searches of a process use one core at most. A task

1. reads the bot's *seat view* (``MatchPort.seat_view``: what that player
   would see, nothing more);
2. if the bot has something to do, waits ``move_delay_ms`` (a human sees
   their own move land first), reads the view again, and searches it with the
   bot's level (``service.bots.search``), seeded by the match id and version,
   so the move is a function of the view alone;
3. sends the command through the match core like any player's, at the
   version it read, with the idempotency key ``bot:<match>:<version>``;
4. goes on while the bot is to move (the opponent has passed, a keep choice).

Two processes may play the same move (a sweep, a retry): the same view, level
and seed give the same command, the idempotency key makes the second a no-op,
and a stale one meets a version conflict. A process that stops mid-thought
leaves the bot to move; the sweep (every ``sweep_s`` seconds, and at start)
finds practice matches whose bot is to move and has not, and pokes them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from psycopg_pool import AsyncConnectionPool

from schemas.cards import Seat
from schemas.views import MatchView
from service.botplay.accounts import BotAccount, BotAccounts
from service.botplay.config import BotPlaySettings
from service.botplay.match_port import CommitNote, MatchPort
from service.bots.levels import LEVELS
from service.bots.search import search
from service.errors import Conflict, NotFound, RuleError, VersionConflict

log = logging.getLogger("matcha.botplay.driver")

Seats = tuple[tuple[Seat, BotAccount], ...]
"""The bot seats of a match (empty: nobody to drive)."""

KNOWN_MATCHES: Final = 10_000
"""Matches whose bot seats this process remembers (a forgotten one is looked up again)."""
MOVES_PER_TASK: Final = 1_000
"""A task gives up after this many moves in a row (a match has far fewer)."""
STALE_S: Final = 10
"""The sweep pokes a practice match its bot has left unmoved for this long."""


def move_seed(match_id: str, version: int) -> int:
    digest = hashlib.sha256(f"bot:{match_id}:{version}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class BotDriver:
    def __init__(
        self,
        port: MatchPort,
        accounts: BotAccounts,
        settings: BotPlaySettings,
        pool: AsyncConnectionPool | None = None,
    ) -> None:
        self._port = port
        self._accounts = accounts
        self._settings = settings
        self._pool = pool
        self._seats: OrderedDict[str, Seats] = OrderedDict()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._thinking = asyncio.Semaphore(max(1, settings.thinkers))
        self._sweeper: asyncio.Task[None] | None = None
        self.moves = 0
        """Bot moves this process has committed."""

    # -- the hook and the tasks ------------------------------------------------------

    async def after_commit(self, note: CommitNote) -> None:
        """The after-commit hook: note the match; a task does the rest (no I/O here)."""
        if note.match_id not in self._seats:
            self._remember(note.match_id, self._bot_seats(note.players))
        self.poke(note.match_id)

    def poke(self, match_id: str) -> None:
        """Make sure the match's bot (if it has one) looks at it soon."""
        if self._seats.get(match_id) == ():
            return  # known: no bot plays in it
        if match_id in self._tasks:
            self._again.add(match_id)
            return
        if len(self._tasks) >= self._settings.max_matches:
            return  # the sweep comes back to it
        task = asyncio.create_task(self._drive(match_id), name=f"bot-{match_id}")
        self._tasks[match_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(match_id, None))

    @property
    def busy(self) -> int:
        """Matches a task is looking at now."""
        return len(self._tasks)

    async def idle(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until no task is running; for tests and shutdown."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self._tasks:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise TimeoutError(f"{len(self._tasks)} bot task(s) still running")
            await asyncio.wait(list(self._tasks.values()), timeout=left)

    async def _drive(self, match_id: str) -> None:
        try:
            for _ in range(MOVES_PER_TASK):
                self._again.discard(match_id)
                moved = False
                for seat, account in await self._seats_of(match_id):
                    seen = await self._port.seat_view(match_id, seat)
                    if seen.result is None and seen.legal_moves:
                        moved = await self._move(match_id, seat, account) or moved
                        break
                if not moved and match_id not in self._again:
                    return
        except NotFound:
            return
        except Exception:  # a bot's failure must never take the process down
            log.exception("the bot could not play in match %s", match_id)

    async def _move(self, match_id: str, seat: Seat, account: BotAccount) -> bool:
        """Think and play one move; False if there was nothing to play after all."""
        await asyncio.sleep(self._settings.move_delay_ms / 1000)
        async with self._thinking:
            seen: MatchView = await self._port.seat_view(match_id, seat)
            if seen.result is not None or not seen.legal_moves:
                return False
            budget = LEVELS[account.level].budget
            found = await asyncio.to_thread(search, seen, budget, move_seed(match_id, seen.version))
        try:
            await self._port.send(
                match_id,
                account.player,
                found.command,
                expected_version=seen.version,
                idempotency_key=f"bot:{match_id}:{seen.version}",
            )
        except (VersionConflict, Conflict):
            return True  # somebody moved first (or another process played this move): look again
        except RuleError:
            log.warning("the rules refused the %s bot's move in match %s", account.level, match_id)
            raise
        self.moves += 1
        return True

    # -- which matches have bots -------------------------------------------------------

    def _bot_seats(self, players: Sequence[str]) -> Seats:
        seats: list[tuple[Seat, BotAccount]] = []
        for seat, player_id in ((0, players[0]), (1, players[1])):
            account = self._accounts.of_player(player_id)
            if account is not None and account.level in LEVELS:
                seats.append((seat, account))  # type: ignore[arg-type]
        return tuple(seats)

    def _remember(self, match_id: str, seats: Seats) -> None:
        self._seats[match_id] = seats
        self._seats.move_to_end(match_id)
        while len(self._seats) > KNOWN_MATCHES:
            self._seats.popitem(last=False)

    async def _seats_of(self, match_id: str) -> Seats:
        seats = self._seats.get(match_id)
        if seats is None:  # a match the sweep found, or one forgotten since
            seats = self._bot_seats(await self._port.players(match_id))
            self._remember(match_id, seats)
        return seats

    # -- the sweep -----------------------------------------------------------------------

    def start(self) -> None:
        if self._pool is not None and self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_loop(), name="bot-sweep")

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Cancel the sweep and every task, waiting at most ``timeout_s`` (a search in
        its thread finishes within its level's CPU ceiling)."""
        tasks = [t for t in (self._sweeper, *self._tasks.values()) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)
        self._sweeper = None

    async def sweep(self, stale_s: float = STALE_S) -> int:
        """Poke the unfinished matches of bot players not updated for ``stale_s``; how many."""
        if self._pool is None or not self._accounts.player_ids:
            return 0
        bots = self._accounts.player_ids
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT match_id FROM match_summaries"
                " WHERE status = 'live' AND (player0 = ANY(%s) OR player1 = ANY(%s))"
                "   AND updated_at <= now() - make_interval(secs => %s)"
                " ORDER BY updated_at LIMIT %s",
                (bots, bots, stale_s, self._settings.max_matches),
            )
            rows = await cur.fetchall()
        for (match_id,) in rows:
            self.poke(match_id)
        return len(rows)

    async def _sweep_loop(self) -> None:
        stale: float = 0  # at start: every match a bot was left to move in
        while True:
            try:
                await self.sweep(stale)
            except Exception as error:  # the database may be away: try again next time
                log.warning("the bot sweep failed: %s", error)
            stale = STALE_S
            await asyncio.sleep(max(1, self._settings.sweep_s))
