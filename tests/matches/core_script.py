"""Given/when/then helpers for the match core's tests: a table of two players
("ann" in seat 0, "bo" in seat 1) whose commands go straight to ``MatchCore``.

Commands are chosen from the engine's ``legal_moves`` (the engine knows the
rules; these tests only drive the pipeline), and ``truth`` folds what the store
holds, so a test can hold the core's cached fold against the log itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from schemas.cards import Seat
from schemas.commands import Command, Resign, SeatCommand
from schemas.rules import MatchTerms
from service.engine import State, fold, legal_moves
from service.errors import Forbidden
from service.matches import Accepted, Folded, MakeCommand, MatchCore, MatchFacts
from service.matches.summaries import Summary, summarise
from service.store import EventStore

PLAYERS = ("ann", "bo")
START = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


class Clock:
    """The instant the core stamps on commands: set by the test, never the wall's."""

    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def as_player(player: str, command: SeatCommand) -> MakeCommand:
    """The core's ``MakeCommand`` for ``player`` sending ``command`` (its own seat)."""

    def make(facts: MatchFacts, _: Folded) -> Command:
        if facts.seat_of(player) != command.seat:
            raise Forbidden("Only the two players of this match may act in it.")
        return command

    return make


@dataclass
class Table:
    core: MatchCore
    match_id: str = ""
    history: list[Accepted] = field(default_factory=list)

    async def start(self, ruleset: str = "duel", terms: MatchTerms | None = None) -> str:
        started = await self.core.start(
            players=PLAYERS, ruleset=ruleset, ladder_id=None, terms=terms
        )
        self.match_id = started.match_id
        return self.match_id

    async def state(self) -> State:
        return (await self.core.current(self.match_id)).state

    async def mover(self) -> Seat:
        """The seat that has something to do now (the lower one between hands)."""
        state = await self.state()
        for seat in (0, 1):
            if legal_moves(state, seat):
                return seat
        raise AssertionError("nobody can move: the match is over")

    async def legal(self, seat: Seat | None = None) -> SeatCommand:
        """The first legal command of ``seat`` (default: whoever must act)."""
        seat = await self.mover() if seat is None else seat
        return legal_moves(await self.state(), seat)[0]

    async def play(
        self,
        command: SeatCommand | None = None,
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Accepted:
        """``command`` (default: the first legal one of whoever must act) from its seat's player."""
        command = command or await self.legal()
        accepted = await self.core.run(
            self.match_id,
            as_player(PLAYERS[command.seat], command),
            actor=PLAYERS[command.seat],
            expected_version=expected_version,
            idempotency_key=idempotency_key,
        )
        self.history.append(accepted)
        return accepted

    async def resign(self, seat: Seat = 0) -> Accepted:
        return await self.play(Resign(seat=seat))

    async def version(self) -> int:
        return await self.core.store.version(self.match_id)

    async def truth(self) -> tuple[State, Summary, int]:
        """The match folded from what the store holds now (no cache involved)."""
        rows = await self.core.store.load(self.match_id)
        seed = await self.core.store.load_seed(self.match_id)
        events = [r.event for r in rows]
        state = fold(events, seed, times=[r.recorded_at for r in rows])
        return state, summarise(events), len(rows)


async def one_match_two_cores(
    store: EventStore, clock: Clock, ruleset: str = "duel", terms: MatchTerms | None = None
) -> tuple[Table, Table]:
    """One new match, seen through two cores on one store (two API processes):
    the first started it (so it caches it), the second has read nothing yet."""
    cores = (MatchCore(store), MatchCore(store))
    for core in cores:
        core.now = clock
    here, there = Table(cores[0]), Table(cores[1])
    there.match_id = await here.start(ruleset, terms)
    return here, there
