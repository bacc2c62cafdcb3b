"""Arena: continuous pairing in a time window (``service.tournaments.arena``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from schemas.tournaments import Arena, ArenaPaired, Format, TiebreakName
from service.errors import RuleError
from service.tournaments import arena
from service.tournaments.formats.base import Emit, Forced, new_game
from service.tournaments.records import records
from service.tournaments.standings import scores
from service.tournaments.state import AnyTournament, TournamentSheet

MAX_ARENA_MINUTES: Final = 7 * 24 * 60


def arena_over(t: TournamentSheet, at: datetime) -> bool:
    return t.ends_at is not None and at >= t.ends_at


class ArenaRules:
    default_tiebreaks: tuple[TiebreakName, ...] = ("sonneborn_berger", "wins")
    fixed_pairings: bool = False
    rounds_it_pairs: bool = False

    def half_point_byes(self, t: TournamentSheet) -> int:
        return 0

    def validate(self, fmt: Format) -> None:
        assert isinstance(fmt, Arena)
        if not 1 <= fmt.minutes <= MAX_ARENA_MINUTES:
            raise RuleError(
                "bad_duration",
                f"An arena lasts 1 to {MAX_ARENA_MINUTES} minutes, not {fmt.minutes}.",
            )

    def total_rounds(self, t: AnyTournament) -> int:
        return 0

    def check_entry(self, t: TournamentSheet, at: datetime) -> None:
        if arena_over(t, at):
            raise RuleError("arena_over", "The arena's time is up.")

    def start(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        self.after_game(t, at, emit)

    def pair_round(self, t: TournamentSheet, at: datetime, emit: Emit, forced: Forced) -> None:
        raise RuleError("arena_pairs_itself", "An arena pairs players as they finish.")

    def after_game(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        """Pair the arena's waiting players, while its time lasts."""
        assert isinstance(t.format, Arena)
        if arena_over(t, at) or len(t.waiting) < 2:
            return
        recs = records(t, only=t.waiting)
        points = scores(t, recs)
        waiting = sorted(
            t.waiting,
            key=lambda p: (-points[p], -t.entrants[p].rating, t.entrants[p].number),
        )
        pool = []
        for player_id in waiting:
            rows = recs[player_id]
            pool.append(
                arena.ArenaPlayer(
                    player_id=player_id,
                    opponents=frozenset(r.opponent for r in rows if r.opponent),
                    seats=tuple(r.seat for r in rows if r.played and r.seat is not None),
                    last_opponent=rows[-1].opponent if rows else None,
                )
            )
        pairs = arena.pair_pool(pool, forbidden=t.forbidden, avoid_repeats=t.format.avoid_repeats)
        if not pairs:
            return
        number = len(t.games)
        games = tuple(
            new_game(t, number + board, 0, board, pair) for board, pair in enumerate(pairs, start=1)
        )
        emit(ArenaPaired(at=at, games=games))

    def is_over(self, t: TournamentSheet) -> bool:
        return False

    def ends_at(self, t: TournamentSheet, at: datetime) -> datetime | None:
        assert isinstance(t.format, Arena)
        return at + timedelta(minutes=t.format.minutes)


RULES = ArenaRules()
