"""A whole tournament played by bots, in memory: the tournament engine and the
match engine, no database (``matcha tournament``, the bench, the tests).

Every game is a real match played through the match engine's self-play by
the two players' bots; its end becomes the ``RecordResult`` the results
runner would send. An arena runs on a simulated clock: a match lasts two
seconds per event of its log (plus up to a minute of dawdling), so players
who finish quickly are paired again sooner, as in a live arena.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from schemas.cards import SEATS, Seat
from schemas.rules import RULESETS
from schemas.tournaments import (
    Arena,
    CreateTournament,
    EndTournament,
    Format,
    JoinTournament,
    RecordResult,
    StartTournament,
    TournamentCommand,
    TournamentEvent,
)
from service.bots import Bot
from service.engine.selfplay import play_match
from service.tournaments.decide import step
from service.tournaments.state import TournamentState, initial_state, running_games

EPOCH = datetime(2030, 1, 1, 18, 0, tzinfo=UTC)
"""The simulated clock's start (any fixed instant: runs are reproducible)."""


@dataclass(frozen=True)
class BotEntrant:
    player_id: str
    rating: float
    bot: Bot


@dataclass
class Run:
    """A simulated tournament: its state, its log, and the matches played."""

    state: TournamentState = field(default_factory=initial_state)
    log: list[TournamentEvent] = field(default_factory=list)
    matches: int = 0

    def send(self, command: TournamentCommand) -> list[TournamentEvent]:
        self.state, events = step(self.state, command)
        self.log.extend(events)
        return events


def simulate(
    fmt: Format,
    entries: Sequence[BotEntrant],
    rng: random.Random,
    *,
    ruleset: str = "standard",
    tiebreaks: tuple[str, ...] | None = None,
    no_show_rate: float = 0.0,
    on_game: Callable[[Run], None] | None = None,
    tournament_id: str = "simulated",
) -> Run:
    """Run the tournament to its end; ``on_game`` is called after each result."""
    run = Run()
    clock = EPOCH
    run.send(
        CreateTournament(
            at=clock,
            tournament_id=tournament_id,
            name="Simulated",
            organiser="simulator",
            ladder_id="simulated",
            ruleset=ruleset,
            format=fmt,
            tiebreaks=tiebreaks,
        )
    )
    for entry in entries:
        run.send(JoinTournament(at=clock, player_id=entry.player_id, rating=entry.rating))
    run.send(StartTournament(at=clock))
    bots = {e.player_id: e.bot for e in entries}
    rules = RULESETS[ruleset]

    def play(match_id: str, players: tuple[str, str]) -> tuple[RecordResult, int]:
        final, log = play_match((bots[players[0]], bots[players[1]]), rules, rng, match_id)
        run.matches += 1
        if rng.random() < no_show_rate:
            seat: Seat = rng.choice(SEATS)
            return RecordResult(
                at=clock, match_id=match_id, winner=None, reason="aborted", forfeit=seat
            ), 3
        return RecordResult(
            at=clock, match_id=match_id, winner=final.winner, reason=final.end_reason or "none"
        ), len(log)

    if not isinstance(fmt, Arena):
        while run.state.phase != "finished":
            games = [g for g in running_games(run.state) if g.match_id is not None]
            if not games:
                break  # a round the organiser must pair: not in a simulation
            clock += timedelta(minutes=30)
            for game in games:
                assert game.match_id is not None
                result, _ = play(game.match_id, game.players)
                run.send(
                    RecordResult(
                        at=clock,
                        match_id=result.match_id,
                        winner=result.winner,
                        reason=result.reason,
                        forfeit=result.forfeit,
                    )
                )
                if on_game:
                    on_game(run)
        return run

    # The arena: a queue of matches by the time they end.
    ends: list[tuple[datetime, int, str, RecordResult]] = []
    scheduled: set[str] = set()

    def schedule() -> None:
        for game in running_games(run.state):
            if game.match_id is None or game.match_id in scheduled:
                continue
            scheduled.add(game.match_id)
            result, events = play(game.match_id, game.players)
            done = clock + timedelta(seconds=2 * events + rng.uniform(0, 60))
            heapq.heappush(ends, (done, game.game, game.match_id, result))

    schedule()
    assert run.state.ends_at is not None
    ended = False
    while ends:
        at, _, match_id, result = heapq.heappop(ends)
        if not ended and at >= run.state.ends_at:
            clock = run.state.ends_at
            run.send(EndTournament(at=clock))
            ended = True
        clock = max(clock, at)
        run.send(
            RecordResult(
                at=clock,
                match_id=match_id,
                winner=result.winner,
                reason=result.reason,
                forfeit=result.forfeit,
            )
        )
        if on_game:
            on_game(run)
        schedule()
    if not ended:
        run.send(EndTournament(at=max(clock, run.state.ends_at)))
    return run
