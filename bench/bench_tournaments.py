"""Tournament engine speed: pairing a Swiss round, and arena pairing under load.

* ``swiss_pair_100_s``, ``swiss_pair_1000_s``: the time to pair one round of
  a Swiss of 100 and of 1,000 players (goal for 1,000: <= 2 s). A 7-round
  Swiss is played in memory with results drawn from the ratings (Elo odds,
  5 % draws); each round is paired by the engine's ``PairRound`` step
  (reading every player's record, the weighted matching, the seats). The
  figure is the *worst* round; ``*_rounds_s`` lists them all.
* ``arena_pairing_p99_ms``: an arena of 300 players under a stream of
  finishing matches (3,000 results, in random order): each result is one
  engine step that records it and pairs whoever is waiting; p50/p99/max of
  that step.

Times are this process's CPU time (``time.process_time``): the machine is
shared, and the wall clock would measure the neighbours. Writes
bench/results/tournaments.json.

    .venv/bin/python -m bench tournaments
    MATCHA_BENCH_TOURNAMENT_SCALE=0.1 .venv/bin/python -m bench tournaments   # a quick check
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.results_file import merge_results
from schemas.cards import Seat
from schemas.tournaments import (
    Arena,
    CreateTournament,
    JoinTournament,
    PairRound,
    RecordResult,
    StartTournament,
    Swiss,
)
from service.tournaments import step
from service.tournaments.state import TournamentState, initial_state, running_games

RESULTS = Path(__file__).parent / "results" / "tournaments.json"
SCALE = float(os.environ.get("MATCHA_BENCH_TOURNAMENT_SCALE", "1"))
AT = datetime(2030, 1, 1, 18, 0, tzinfo=UTC)


def _entered(fmt: Any, players: int, rng: random.Random, **extra: Any) -> TournamentState:
    state, _ = step(
        initial_state(),
        CreateTournament(
            at=AT,
            tournament_id="bench",
            name="bench",
            organiser="o",
            ladder_id="l",
            ruleset="standard",
            format=fmt,
            **extra,
        ),
    )
    for i in range(players):
        state, _ = step(
            state, JoinTournament(at=AT, player_id=f"p{i:05}", rating=rng.gauss(1500, 200))
        )
    return step(state, StartTournament(at=AT))[0]


def _decide(state: TournamentState, rng: random.Random, players: tuple[str, str]) -> Seat | None:
    a, b = (state.entrants[p].rating for p in players)
    expected = 1 / (1 + 10 ** ((b - a) / 400))
    x = rng.random()
    return 0 if x < 0.95 * expected else 1 if x < 0.95 else None


def swiss_rounds(players: int, rounds: int = 7, seed: int = 1) -> list[float]:
    """CPU seconds of each round's pairing step."""
    rng = random.Random(seed)
    state = _entered(Swiss(rounds=rounds), players, rng, auto_pair=False)
    times = []
    for r in range(1, rounds + 1):
        started = time.process_time()
        state, _ = step(state, PairRound(at=AT, round=r))
        times.append(time.process_time() - started)
        for game in running_games(state):
            assert game.match_id is not None
            state, _ = step(
                state,
                RecordResult(
                    at=AT,
                    match_id=game.match_id,
                    winner=_decide(state, rng, game.players),
                    reason="qualified",
                ),
            )
    return times


def arena_latencies(players: int, results: int, seed: int = 2) -> list[float]:
    """CPU milliseconds of each result's step (record it, pair the waiting)."""
    rng = random.Random(seed)
    state = _entered(Arena(minutes=600), players, rng)
    out = []
    for n in range(results):
        games = running_games(state)
        if not games:
            break
        game = rng.choice(games)
        assert game.match_id is not None
        command = RecordResult(
            at=AT + timedelta(seconds=n),
            match_id=game.match_id,
            winner=_decide(state, rng, game.players),
            reason="qualified",
        )
        started = time.process_time()
        state, _ = step(state, command)
        out.append(1000 * (time.process_time() - started))
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    small, big = max(4, int(100 * SCALE)), max(4, int(1000 * SCALE))
    figures: dict[str, Any] = {}
    for size, key in ((small, "swiss_pair_100"), (big, "swiss_pair_1000")):
        rounds = swiss_rounds(size)
        figures[f"{key}_s"] = round(max(rounds), 4)
        figures[f"{key}_rounds_s"] = [round(t, 4) for t in rounds]
        print(
            f"swiss, {size} players: worst round {max(rounds):.3f} s, median "
            f"{statistics.median(rounds):.3f} s ({', '.join(f'{t:.3f}' for t in rounds)})"
        )
    arena_players, arena_results = max(4, int(300 * SCALE)), max(10, int(3000 * SCALE))
    steps = arena_latencies(arena_players, arena_results)
    figures["arena_pairing_p99_ms"] = round(_pct(steps, 0.99), 3)
    figures["arena_pairing_p50_ms"] = round(_pct(steps, 0.50), 3)
    figures["arena_pairing_max_ms"] = round(max(steps), 3)
    figures["arena_players"] = arena_players
    figures["arena_results"] = len(steps)
    print(
        f"arena, {arena_players} players, {len(steps)} results: pairing step p50 "
        f"{figures['arena_pairing_p50_ms']} ms, p99 {figures['arena_pairing_p99_ms']} ms, "
        f"max {figures['arena_pairing_max_ms']} ms"
    )
    figures["swiss_goal_1000_s"] = 2.0
    figures["clock"] = "process CPU time"
    figures["machine"] = f"{platform.machine()} {os.cpu_count()} cpu, load {os.getloadavg()[0]:.1f}"
    if SCALE != 1:
        print(f"scale {SCALE}: a check run, {RESULTS.name} left as it was")
        return
    merge_results(RESULTS, figures)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
