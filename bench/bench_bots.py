"""The search bot against the heuristic bot, playout speed, the spectators' estimate.

* ``search_vs_heuristic_win_rate_standard`` / ``_duel``: the ``strong`` level
  (``service.bots.levels.BENCH_LEVEL``, 60 playouts a move) plays
  ``MATCHES`` matches per ruleset against ``heuristic_bot``, taking each seat
  half the time; its score rate (a draw counts one half) with the 95 % Wilson
  interval beside it (``..._low``/``..._high``). Goal: at least 65 %.
* ``search_ms_per_move_p99``: the 99th percentile of the search bot's CPU
  time per move over both rulesets, building its view included (goal <= 50
  ms); ``search_ms_per_move_p99_wall`` is the same by the wall clock, which
  a shared machine stretches.
* ``playouts_per_s``: determinizations played out per CPU second by the
  search, one core (standard positions from heuristic self-play).
* ``winprob_brier_skill``: the spectators' estimate
  (``service.bots.winprob.estimate_for_spectators``, its served budget of
  200 playouts) at ``CALIBRATION_SHARE`` of the positions of
  ``CALIBRATION_MATCHES`` matches per ruleset between bots of mixed strength
  (each seat one of heuristic, beginner, casual, strong), against what
  happened: 1 - Brier / Brier of a constant 0.5; ``winprob_calibration``
  holds the table (forecast bins of 0.1, seat 0's expected score against its
  actual score).

The matches run in two worker processes (both cores). At the full size
(2,000 matches per ruleset, 200 calibration matches per ruleset) it takes
about 13 minutes on this 2-core machine when it is quiet, and up to twice that
when the other engineers' runs load it; a reduced run (400 and 100) took 10
minutes (610 s) at a load average of 3 to 9, so the full size there is about
50 minutes. ``make bench`` runs the full size. ``MATCHA_BENCH_BOTS_MATCHES`` and
``MATCHA_BENCH_BOTS_CALIBRATION`` set the sizes. Writes bench/results/bots.json.

    .venv/bin/python -m bench bots
    MATCHA_BENCH_BOTS_MATCHES=200 MATCHA_BENCH_BOTS_CALIBRATION=40 .venv/bin/python -m bench bots
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm  # type: ignore[import-untyped]

from bench.results_file import merge_results
from schemas.cards import Seat
from schemas.commands import SeatCommand
from schemas.rules import RULESETS, STANDARD
from schemas.views import MatchView
from service.bots.arena import WORKERS, MatchOutcome, play_matches, tally, wilson
from service.bots.calibration import brier_skill, calibration_table, expected_score
from service.bots.levels import BENCH_LEVEL, bot_named
from service.bots.search import Budget, search
from service.bots.simple import heuristic_bot
from service.bots.winprob import estimate_for_spectators
from service.engine import State, view
from service.engine.selfplay import play_match
from service.engine.state import Board, freeze

MATCHES = int(os.environ.get("MATCHA_BENCH_BOTS_MATCHES", "2000"))
CALIBRATION_MATCHES = int(os.environ.get("MATCHA_BENCH_BOTS_CALIBRATION", "200"))
CALIBRATION_SHARE = 0.25
"""Of the positions where a seat is to move, the share the estimate is asked about."""
CALIBRATION_PLAYERS = ("heuristic", "beginner", "casual", "strong")
SPEED_POSITIONS = 300
SPEED_PLAYOUTS = 200
SEED = 2026
GOAL_WIN_RATE = 0.65
GOAL_MS = 50.0
RESULTS = Path(__file__).parent / "results" / "bots.json"


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0


def _versus(ruleset: str) -> tuple[list[MatchOutcome], float]:
    started = time.perf_counter()
    with tqdm(total=MATCHES, unit="match", desc=f"{BENCH_LEVEL} vs heuristic, {ruleset}") as bar:
        outcomes = play_matches(
            BENCH_LEVEL, "heuristic", ruleset, MATCHES, SEED, progress=lambda _: bar.update(1)
        )
    return outcomes, time.perf_counter() - started


def _positions(count: int) -> list[MatchView]:
    """Seats' views where the seat is to move, from heuristic self-play (standard)."""
    rng = random.Random(SEED)
    views: list[MatchView] = []

    def recording(board: Board, seat: Seat, r: random.Random) -> SeatCommand:
        if len(views) < count and r.random() < 0.3:
            views.append(view(freeze(board) if not isinstance(board, State) else board, seat))
        return heuristic_bot(board, seat, r)

    while len(views) < count:
        play_match((recording, heuristic_bot), STANDARD, rng)
    return views


def _playouts_per_s() -> float:
    views = _positions(SPEED_POSITIONS)
    done = 0
    started = time.process_time()
    for i, v in enumerate(views):
        done += search(v, Budget(playouts=SPEED_PLAYOUTS), i).playouts
    return done / (time.process_time() - started)


def _calibration_match(job: tuple[str, int]) -> list[tuple[float, float, float]]:
    """One match between bots of mixed strength: (forecast, ms, outcome) of each
    position estimated."""
    ruleset, index = job
    rng = random.Random(f"calibration:{SEED}:{ruleset}:{index}")
    asked = random.Random(f"asked:{SEED}:{ruleset}:{index}")
    names = (rng.choice(CALIBRATION_PLAYERS), rng.choice(CALIBRATION_PLAYERS))
    bots = tuple(bot_named(n) for n in names)
    forecasts: list[tuple[float, float]] = []

    def estimating(seat_bot: Any) -> Any:
        def bot(board: Board, seat: Seat, r: random.Random) -> SeatCommand:
            if asked.random() < CALIBRATION_SHARE:
                state = freeze(board) if not isinstance(board, State) else board
                started = time.thread_time()
                p = estimate_for_spectators(view(state, "spectator"))
                forecasts.append((expected_score(p), (time.thread_time() - started) * 1000))
            return seat_bot(board, seat, r)  # type: ignore[no-any-return]

        return bot

    final, _ = play_match(
        (estimating(bots[0]), estimating(bots[1])), RULESETS[ruleset], rng, f"cal-{index}"
    )
    score = 0.5 if final.winner is None else float(final.winner == 0)
    return [(f, ms, score) for f, ms in forecasts]


def _calibration() -> tuple[list[float], list[float], list[float]]:
    jobs = [(r, i) for r in ("standard", "duel") for i in range(CALIBRATION_MATCHES)]
    forecasts: list[float] = []
    outcomes: list[float] = []
    costs: list[float] = []
    context = multiprocessing.get_context("fork")
    with (
        context.Pool(WORKERS) as pool,
        tqdm(total=len(jobs), unit="match", desc="spectator estimate") as bar,
    ):
        for rows in pool.imap_unordered(_calibration_match, jobs, chunksize=2):
            for f, ms, o in rows:
                forecasts.append(f)
                costs.append(ms)
                outcomes.append(o)
            bar.update(1)
    return forecasts, outcomes, costs


def main() -> None:
    started = time.perf_counter()
    figures: dict[str, Any] = {}
    all_moves: list[float] = []
    all_walls: list[float] = []
    for ruleset in ("standard", "duel"):
        outcomes, elapsed = _versus(ruleset)
        t = tally(outcomes)
        low, high = wilson(t.a_wins + t.draws / 2, t.matches)
        moves = [ms for o in outcomes for ms in o.a_move_ms]
        all_moves += moves
        all_walls += [ms for o in outcomes for ms in o.a_move_wall_ms]
        figures[f"search_vs_heuristic_win_rate_{ruleset}"] = round(t.score, 4)
        figures[f"search_vs_heuristic_win_rate_{ruleset}_low"] = round(low, 4)
        figures[f"search_vs_heuristic_win_rate_{ruleset}_high"] = round(high, 4)
        figures[f"search_vs_heuristic_{ruleset}"] = {
            "matches": t.matches,
            "search_wins": t.a_wins,
            "heuristic_wins": t.b_wins,
            "draws": t.draws,
            "search_moves": len(moves),
            "search_ms_per_move_mean": round(statistics.fmean(moves), 2),
            "search_ms_per_move_p99": round(_p99(moves), 2),
            "seconds": round(elapsed, 1),
        }
        print(
            f"{ruleset}: {BENCH_LEVEL} scores {100 * t.score:.1f} % against heuristic"
            f" (95 % {100 * low:.1f}-{100 * high:.1f}), {t.a_wins}/{t.b_wins}/{t.draws}"
            f" W/L/D, p99 {_p99(moves):.1f} ms a move, {elapsed:.0f} s"
        )
    figures["search_ms_per_move_p99"] = round(_p99(all_moves), 2)
    figures["search_ms_per_move_p99_wall"] = round(_p99(all_walls), 2)
    figures["search_level"] = BENCH_LEVEL
    rate = _playouts_per_s()
    figures["playouts_per_s"] = round(rate)
    print(f"playouts: {rate:,.0f} per CPU second (one core)")
    forecasts, outcomes_, costs = _calibration()
    skill = brier_skill(forecasts, outcomes_)
    table = calibration_table(forecasts, outcomes_)
    figures["winprob_brier_skill"] = round(skill, 4)
    figures["winprob_positions"] = len(forecasts)
    figures["winprob_ms_per_estimate_mean"] = round(statistics.fmean(costs), 2)
    figures["winprob_ms_per_estimate_p99"] = round(_p99(costs), 2)
    figures["winprob_calibration"] = [
        {
            "forecast": f"{b.low:.1f}-{b.high:.1f}",
            "positions": b.positions,
            "mean_forecast": None if b.mean_forecast is None else round(b.mean_forecast, 3),
            "observed": None if b.observed is None else round(b.observed, 3),
        }
        for b in table
    ]
    print(f"spectator estimate: Brier skill {skill:.3f} over {len(forecasts)} positions")
    print("  forecast   positions  mean forecast  seat 0 scored")
    for b in table:
        if b.positions:
            print(
                f"  {b.low:.1f}-{b.high:.1f}   {b.positions:9d}  {b.mean_forecast:13.3f}"
                f"  {b.observed:13.3f}"
            )
    figures["targets"] = {
        "search_vs_heuristic_win_rate": GOAL_WIN_RATE,
        "search_ms_per_move_p99": GOAL_MS,
    }
    figures["matches_per_ruleset"] = MATCHES
    figures["calibration_matches_per_ruleset"] = CALIBRATION_MATCHES
    figures["workers"] = WORKERS
    figures["seconds"] = round(time.perf_counter() - started, 1)
    figures["python"] = platform.python_version()
    figures["clock"] = "thread_time (CPU time of the bot's process) per move; wall also given"
    figures["load_average"] = os.getloadavg()[0]
    figures["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    merge_results(RESULTS, figures)
    print(f"{figures['seconds']:.0f} s in all; written to {RESULTS}")


if __name__ == "__main__":
    main()
