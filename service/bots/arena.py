"""Two bots play many matches: the win rate, its 95 % interval, the time per move.

Used by ``matcha bots`` and bench/bench_bots.py. Match ``i`` of a run with
seed ``s`` is played with ``random.Random(f"{s}:{i}")`` (string seeds hash
the same in every process), bot A takes seat 0 in even matches and seat 1 in
odd ones, so a run gives the same results on one core or many, in any order.
"""

from __future__ import annotations

import math
import multiprocessing
import random
import time
from collections.abc import Callable, Iterator
from typing import Final

import msgspec

from schemas.cards import Seat
from schemas.commands import SeatCommand
from schemas.rules import RULESETS
from service.bots.levels import bot_named
from service.engine.selfplay import play_match
from service.engine.state import Board


class MatchOutcome(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    a_seat: Seat
    winner: Seat | None
    a_move_ms: tuple[float, ...]
    """Bot A's CPU time for each of its moves, view building included."""
    a_move_wall_ms: tuple[float, ...] = ()
    """The same moves by the wall clock (longer when the machine is busy)."""


class Tally(msgspec.Struct, frozen=True, kw_only=True):
    matches: int
    a_wins: int
    b_wins: int
    draws: int

    @property
    def score(self) -> float:
        """A's score rate: a win counts 1, a draw one half."""
        return (self.a_wins + self.draws / 2) / self.matches if self.matches else 0.0


def wilson(successes: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % for the default ``z``).

    Unlike the normal approximation it stays inside [0, 1] and behaves near 0
    and 1 and for small ``n`` (Wilson 1927; Brown, Cai and DasGupta 2001).
    A draw counted as half a success keeps it a good approximation.
    """
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def tally(outcomes: list[MatchOutcome]) -> Tally:
    a = sum(1 for o in outcomes if o.winner is not None and o.winner == o.a_seat)
    draws = sum(1 for o in outcomes if o.winner is None)
    return Tally(matches=len(outcomes), a_wins=a, b_wins=len(outcomes) - a - draws, draws=draws)


def play_one(a: str, b: str, ruleset: str, seed: int, index: int) -> MatchOutcome:
    """Match ``index`` of the run (see the module docstring)."""
    rng = random.Random(f"{seed}:{index}")
    a_bot, b_bot = bot_named(a), bot_named(b)
    times: list[float] = []
    walls: list[float] = []

    def timed(board: Board, seat: Seat, r: random.Random) -> SeatCommand:
        started, wall = time.thread_time(), time.perf_counter()
        command = a_bot(board, seat, r)
        times.append((time.thread_time() - started) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
        return command

    a_seat: Seat = 0 if index % 2 == 0 else 1
    players = (timed, b_bot) if a_seat == 0 else (b_bot, timed)
    final, _ = play_match(players, RULESETS[ruleset], rng, match_id=f"arena-{index}")
    return MatchOutcome(
        index=index,
        a_seat=a_seat,
        winner=final.winner,
        a_move_ms=tuple(times),
        a_move_wall_ms=tuple(walls),
    )


def _play_star(job: tuple[str, str, str, int, int]) -> MatchOutcome:
    return play_one(*job)


WORKERS: Final = max(1, min(2, multiprocessing.cpu_count()))
"""Both cores of the 2-core machine the service runs on (at most two)."""


def play_matches(
    a: str,
    b: str,
    ruleset: str,
    matches: int,
    seed: int,
    workers: int = WORKERS,
    progress: Callable[[MatchOutcome], None] | None = None,
) -> list[MatchOutcome]:
    """Play ``matches`` matches of bot A against bot B, over ``workers`` processes.

    ``progress`` is called after each match (in the calling process). The
    answer is in match order whatever order the workers finished in.
    """
    bot_named(a), bot_named(b)  # unknown names fail here, not in a worker
    jobs = [(a, b, ruleset, seed, i) for i in range(matches)]
    outcomes: list[MatchOutcome] = []
    results: Iterator[MatchOutcome]
    if workers <= 1 or matches < 2:
        results = (play_one(*job) for job in jobs)
        for outcome in results:
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome)
    else:
        # "spawn" would re-import the service per worker; "fork" shares what is loaded.
        context = multiprocessing.get_context("fork")
        with context.Pool(workers) as pool:
            for outcome in pool.imap_unordered(_play_star, jobs, chunksize=4):
                outcomes.append(outcome)
                if progress is not None:
                    progress(outcome)
    outcomes.sort(key=lambda o: o.index)
    return outcomes
