"""Engine speed: folding recorded matches, and random-vs-random self-play.

* ``fold_events_per_s``: events folded per second into a ``State`` (one core),
  over matches recorded by random self-play (standard ruleset);
  ``fold_match_us``: the time to rebuild one average match.
* ``selfplay_matches_per_s``: random vs random, standard: every command is
  checked and decided, its events are built and applied (``decide.run``, the
  loop ``step`` wraps), the bots choose on the live table.
* ``step_matches_per_s``: the same through the public ``step``, which also
  copies the immutable ``State`` in and out for every command.
* ``reference_matches_per_s``: the same random self-play on the plain-dict
  second implementation of the rules (tests/engine/reference_rules.py: no
  typed events, no checks beyond asserts, the same deal), timed interleaved
  with the engine in alternating turns of 0.1 s, each side's CPU summed
  apart (``_paired_rates``): on a shared machine the ratio is steadier than
  either figure (within about 2 % at load 6, where rounds of a second in turn
  gave 1.1 to 2.1).

Time is the CPU time of this process (``time.process_time``), not the wall
clock: the machine is shared, and "one core" means the CPU this process got.
Each figure is the median of ROUNDS timed rounds; the best round is
reported too. Writes bench/results/engine.json.

    .venv/bin/python -m bench engine

CPU time still moves by a factor of two or three with the load of a shared
machine. Instruction counts do not: ``workload(matches, folds)`` plays
``matches`` random-vs-random matches, then folds 500 recorded ones ``folds``
times; run it under callgrind twice and take the difference per match or
per event (docs/rules-engine.md, "Speed", has the commands and the counts).
"""

import importlib.util
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from bench.results_file import merge_results
from schemas.commands import StartMatch
from schemas.events import Event
from schemas.rules import STANDARD
from service.bots import random_bot
from service.engine import fold, initial_state, step
from service.engine.selfplay import play_match
from service.engine.turns import must_keep

ROUNDS = int(os.environ.get("MATCHA_BENCH_ROUNDS", "5"))
SECONDS = float(os.environ.get("MATCHA_BENCH_SECONDS", "1.0"))
RESULTS = Path(__file__).parent / "results" / "engine.json"


def _rate(work: Callable[[], int]) -> tuple[float, float]:
    """Run ``work`` (returns units done) for ~SECONDS, ROUNDS times: (median, best) units/s."""
    rates = []
    for _ in range(ROUNDS):
        done = 0
        started = time.process_time()
        while (elapsed := time.process_time() - started) < SECONDS:
            done += work()
        rates.append(done / elapsed)
    return statistics.median(rates), max(rates)


TURN_S = float(os.environ.get("MATCHA_BENCH_TURN_S", "0.1"))
"""CPU seconds of one side's turn in ``_paired_rates``: long enough that each side
runs with its caches warm (the engine's reveal outcomes are ~3 MB: turns of 20
matches cost it ~15 %), short enough that both share the machine's load."""


def _paired_rates(a: Callable[[], int], b: Callable[[], int]) -> tuple[float, float]:
    """``a`` and ``b`` in alternating turns for ~2 x SECONDS of CPU: each one's units/s."""
    done = [0, 0]
    spent = [0.0, 0.0]
    while sum(spent) < 2 * SECONDS:
        for k, work in enumerate((a, b)):
            started = time.process_time()
            while (elapsed := time.process_time() - started) < TURN_S:
                done[k] += work()
            spent[k] += elapsed
    return done[0] / spent[0], done[1] / spent[1]


def _step_match(rng: random.Random) -> list[Event]:
    seed = rng.getrandbits(256).to_bytes(32, "big").hex()
    start = StartMatch(
        match_id="b", players=("a", "b"), ruleset=STANDARD, first_dealer=0, seed=seed
    )
    state, log = step(initial_state(), start)
    while not state.ended:
        seat = state.to_move
        if seat is None:
            seat = 0 if must_keep(state, 0) else 1
        state, events = step(state, random_bot(state, seat, rng))
        log.extend(events)
    return log


def _load_reference() -> Any:
    path = Path(__file__).parent.parent / "tests" / "engine" / "reference_rules.py"
    spec = importlib.util.spec_from_file_location("reference_rules", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Reference


def _reference_match(reference: Any, rules: dict[str, Any], rng: random.Random) -> int:
    """Random vs random on the reference implementation; returns its event count."""
    seed = rng.getrandbits(256).to_bytes(32, "big").hex()
    ref = reference(rules, 0, seed)
    while not ref.over:
        if ref.keeping:
            seat = 0 if ref.hands[0] and ref.kept[0] is None else 1
            ref.keep(seat, [c for c in ref.hands[seat] if rng.random() < 0.5])
            continue
        seat = ref.turn
        cards = ref.hands[seat]
        free = [t for t in ("number", "suit") if (seat, t) not in ref.table]
        k = int(rng.random() * (len(cards) * len(free) + 1))
        if k == len(cards) * len(free):
            ref.pass_(seat)
        else:
            ref.play(seat, cards[k // len(free)], free[k % len(free)])
    return len(ref.events)


def _recorded(matches: int = 500) -> list[list[Event]]:
    rng = random.Random(2026)
    return [play_match((random_bot, random_bot), STANDARD, rng)[1] for _ in range(matches)]


def workload(matches: int, folds: int = 0) -> None:
    """A fixed amount of engine work, to count instructions under callgrind.

    The recorded logs are made first in every run (and warm the reveal
    outcome cache, as a long-running process has it warm), so the difference
    between two runs is the self-play or the folding alone.
    """
    logs = _recorded()
    rng = random.Random(7)
    for _ in range(matches):
        play_match((random_bot, random_bot), STANDARD, rng)
    for _ in range(folds):
        for log in logs:
            fold(log)


def main() -> None:
    logs = _recorded()
    rng = random.Random(2026)
    events_per_match = sum(map(len, logs)) / len(logs)

    def fold_all() -> int:
        for log in logs:
            fold(log)
        return sum(map(len, logs))

    fold_rate, fold_best = _rate(fold_all)

    def selfplay() -> int:
        for _ in range(20):
            play_match((random_bot, random_bot), STANDARD, rng)
        return 20

    selfplay_rate, selfplay_best = _rate(selfplay)

    def step_play() -> int:
        for _ in range(20):
            _step_match(rng)
        return 20

    step_rate, step_best = _rate(step_play)

    reference = _load_reference()
    rules = msgspec.to_builtins(STANDARD)

    def reference_play() -> int:
        for _ in range(20):
            _reference_match(reference, rules, rng)
        return 20

    # Engine and reference in alternating turns of TURN_S, each side's CPU time
    # summed apart: a shared machine's load then falls on both alike (rounds of a
    # second each, in turn, gave ratios from 1.1 to 2.1 at load 6).
    pairs = [_paired_rates(selfplay, reference_play) for _ in range(ROUNDS)]
    ratio = statistics.median(engine / ref for engine, ref in pairs)
    reference_rate = statistics.median(ref for _, ref in pairs)

    results = {
        "fold_events_per_s": round(fold_rate),
        "fold_events_per_s_best": round(fold_best),
        "fold_match_us": round(1e6 * events_per_match / fold_rate, 1),
        "events_per_match": round(events_per_match, 1),
        "selfplay_matches_per_s": round(selfplay_rate),
        "selfplay_matches_per_s_best": round(selfplay_best),
        "step_matches_per_s": round(step_rate),
        "step_matches_per_s_best": round(step_best),
        "reference_matches_per_s": round(reference_rate),
        "selfplay_vs_reference": round(ratio, 2),
        "targets": {"fold_events_per_s": 1_000_000, "selfplay_matches_per_s": 5_000},
        "rounds": ROUNDS,
        "seconds_per_round": SECONDS,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "clock": "process_time (CPU time of the benchmark process)",
        "load_average": os.getloadavg()[0],
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    rows = [
        ("fold", "events/s", fold_rate, fold_best, 1_000_000),
        ("fold one match (us)", "us/match", results["fold_match_us"], None, 100),
        ("self-play random vs random", "matches/s", selfplay_rate, selfplay_best, 5_000),
        ("self-play through step()", "matches/s", step_rate, step_best, None),
        ("plain-dict reference", "matches/s", reference_rate, None, None),
        ("self-play / reference", "ratio", ratio, None, None),
    ]
    print(f"{'measure':<28} {'unit':<10} {'median':>12} {'best':>12} {'target':>10}")
    for name, unit, median, best, target in rows:
        best_text = f"{best:12,.0f}" if best is not None else f"{'':>12}"
        target_text = f"{target:10,}" if target is not None else f"{'':>10}"
        print(f"{name:<28} {unit:<10} {median:12,.2f} {best_text} {target_text}")
    print(f"({events_per_match:.1f} events per match; load average {results['load_average']:.2f})")
    merge_results(RESULTS, results)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
