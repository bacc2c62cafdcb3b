"""``matcha bots``: two bots play N matches; A's win rate with its 95 % interval.

    matcha bots strong heuristic --matches 400 --ruleset duel --seed 1

A bot is ``random``, ``heuristic``, a search level (``beginner``, ``casual``,
``strong``, ``master``) or ``search:<playouts>``. A takes seat 0 in even
matches and seat 1 in odd ones. The matches are shared over ``--workers``
processes (both cores by default); the same seed gives the same results
whatever the number of workers.
"""

from __future__ import annotations

import statistics
import time

import click
from tqdm import tqdm  # type: ignore[import-untyped]

from schemas.rules import RULESETS
from service.bots.arena import WORKERS, MatchOutcome, play_matches, tally, wilson
from service.bots.levels import bot_named


def _check_bot(_: click.Context, __: click.Parameter, name: str) -> str:
    try:
        bot_named(name)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error
    return name


@click.command()
@click.argument("a", callback=_check_bot)
@click.argument("b", callback=_check_bot)
@click.option("--matches", "-n", default=200, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--ruleset", type=click.Choice(sorted(RULESETS)), default="standard", show_default=True
)
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the run.")
@click.option("--workers", type=click.IntRange(min=1), default=WORKERS, show_default=True)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def bots(a: str, b: str, matches: int, ruleset: str, seed: int, workers: int, quiet: bool) -> None:
    """Bot A plays matches against bot B; print A's win rate and its 95 % interval.

    A and B: random, heuristic, a search level (beginner, casual, strong,
    master) or search:<playouts>.
    """
    started = time.perf_counter()
    with tqdm(total=matches, disable=quiet, unit="match", desc=f"{a} vs {b}") as bar:

        def advance(_: MatchOutcome) -> None:
            bar.update(1)

        outcomes = play_matches(a, b, ruleset, matches, seed, workers, progress=advance)
    elapsed = time.perf_counter() - started
    t = tally(outcomes)
    low, high = wilson(t.a_wins + t.draws / 2, t.matches)
    click.echo(f"ruleset {ruleset}: {t.matches} matches, A={a} vs B={b}, seed {seed}")
    click.echo(
        f"  A wins {t.a_wins}, B wins {t.b_wins}, draws {t.draws}:"
        f" A scores {100 * t.score:.1f} % (95 % interval {100 * low:.1f}-{100 * high:.1f} %,"
        " Wilson; a draw counts one half)"
    )
    moves = sorted(ms for o in outcomes for ms in o.a_move_ms)
    if moves:
        p99 = moves[min(len(moves) - 1, int(0.99 * len(moves)))]
        click.echo(
            f"  A's moves: {len(moves)}, {statistics.fmean(moves):.1f} ms mean,"
            f" {p99:.1f} ms p99 (CPU time)"
        )
    click.echo(f"  {elapsed:.1f} s on {workers} worker(s)")
