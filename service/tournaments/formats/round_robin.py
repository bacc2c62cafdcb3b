"""Round-robin: FIDE's Berger tables (``service.tournaments.berger``)."""

from __future__ import annotations

from datetime import datetime

from schemas.tournaments import (
    Bye,
    Format,
    Game,
    GameResult,
    ResultRecorded,
    RoundPaired,
    RoundRobin,
    TiebreakName,
)
from service.errors import RuleError
from service.tournaments import berger
from service.tournaments.formats.base import Emit, Forced, new_game
from service.tournaments.state import AnyTournament, TournamentSheet


class RoundRobinRules:
    default_tiebreaks: tuple[TiebreakName, ...] = ("direct_encounter", "sonneborn_berger", "wins")
    fixed_pairings: bool = True
    rounds_it_pairs: bool = True

    def half_point_byes(self, t: TournamentSheet) -> int:
        return 0

    def validate(self, fmt: Format) -> None:
        assert isinstance(fmt, RoundRobin)
        if fmt.cycles not in (1, 2):
            raise RuleError("bad_cycles", f"A round-robin has 1 or 2 cycles, not {fmt.cycles}.")

    def total_rounds(self, t: AnyTournament) -> int:
        assert isinstance(t.format, RoundRobin)
        return berger.rounds_in(len(t.seeds), t.format.cycles)

    def check_entry(self, t: TournamentSheet, at: datetime) -> None:
        raise RuleError(
            "tournament_started", "A round-robin takes no new players once it has started."
        )

    def start(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        self.pair_round(t, at, emit, ((), ()))

    def pair_round(self, t: TournamentSheet, at: datetime, emit: Emit, forced: Forced) -> None:
        assert isinstance(t.format, RoundRobin)
        if forced[0] or forced[1]:
            raise RuleError(
                "pairings_fixed", "A round-robin's pairings come from the Berger tables."
            )
        round_no = t.round + 1
        seeds = t.seeds
        dummy = berger.table_size(len(seeds)) if len(seeds) % 2 else None
        games: list[Game] = []
        byes: list[Bye] = []
        number = len(t.games)
        for board, (a, b) in enumerate(
            berger.schedule_round(len(seeds), t.format.cycles, round_no), start=1
        ):
            if dummy in (a, b):
                resting = seeds[(b if a == dummy else a) - 1]
                byes.append(Bye(player_id=resting, points=0.0, kind="rest"))
                continue
            number += 1
            game = new_game(t, number, round_no, board, (seeds[a - 1], seeds[b - 1]))
            # A game of a player who has withdrawn is decided at once: no match.
            if any(t.entrants[p].withdrawn for p in game.players):
                game = Game(
                    game=number, round=round_no, board=board, players=game.players, match_id=None
                )
            games.append(game)
        emit(RoundPaired(at=at, round=round_no, games=tuple(games), byes=tuple(byes)))
        for game in games:
            if game.match_id is None:
                gone = tuple(t.entrants[p].withdrawn for p in game.players)
                result: GameResult = "--" if all(gone) else "-+" if gone[0] else "+-"
                emit(
                    ResultRecorded(
                        at=at, game=game.game, match_id=None, result=result, reason="withdrawn"
                    )
                )

    def after_game(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        return None

    def is_over(self, t: TournamentSheet) -> bool:
        return t.round >= self.total_rounds(t)

    def ends_at(self, t: TournamentSheet, at: datetime) -> datetime | None:
        return None


RULES = RoundRobinRules()
