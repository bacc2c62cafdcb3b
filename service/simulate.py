"""``matcha simulate``: bots play many matches; win rates, match lengths, speed.

    matcha simulate --games 10000 --ruleset duel --bot heuristic --vs random --seed 1

The first bot takes seat 0 in even games and seat 1 in odd ones, so neither
bot profits from a seat.
"""

import random
import time
from collections import Counter

import click
from tqdm import tqdm  # type: ignore[import-untyped]

from schemas.events import CardPlayed, HandDealt, RoundRevealed
from schemas.rules import RULESETS
from service.bots import BOTS
from service.engine.selfplay import play_match


@click.command()
@click.option("--games", default=1000, show_default=True, help="Matches to play.")
@click.option(
    "--ruleset", type=click.Choice(sorted(RULESETS)), default="standard", show_default=True
)
@click.option("--bot", type=click.Choice(sorted(BOTS)), default="heuristic", show_default=True)
@click.option("--vs", type=click.Choice(sorted(BOTS)), default="random", show_default=True)
@click.option("--seed", type=int, default=None, help="Seed of the run (default: random).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def simulate(games: int, ruleset: str, bot: str, vs: str, seed: int | None, quiet: bool) -> None:
    """Self-play GAMES matches of BOT against VS and print what happened."""
    rules = RULESETS[ruleset]
    rng = random.Random(seed)
    first, second = BOTS[bot], BOTS[vs]
    results: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    hands = rounds = events = plays = 0
    started = time.perf_counter()
    for game in tqdm(range(games), disable=quiet, unit="match", desc=f"{bot} vs {vs}"):
        bot_seat = game % 2
        players = (first, second) if bot_seat == 0 else (second, first)
        final, log = play_match(players, rules, rng, match_id=f"sim-{game}")
        if final.winner is None:
            results["draw"] += 1
        else:
            results["bot" if final.winner == bot_seat else "vs"] += 1
        reasons[final.end_reason or "none"] += 1
        events += len(log)
        for event in log:
            kind = type(event)
            hands += kind is HandDealt
            rounds += kind is RoundRevealed
            plays += kind is CardPlayed
    elapsed = time.perf_counter() - started
    n = max(games, 1)
    click.echo(f"ruleset {ruleset}: {games} matches, A={bot} vs B={vs}, seed {seed}")
    for label, key in ((f"A {bot} wins", "bot"), (f"B {vs} wins", "vs"), ("draws", "draw")):
        click.echo(f"  {label:<18} {results[key]:>7}  {100 * results[key] / n:6.2f} %")
    click.echo("  ended by: " + ", ".join(f"{r} {c}" for r, c in reasons.most_common()))
    click.echo(
        f"  per match: {hands / n:.2f} hands, {rounds / n:.2f} rounds, "
        f"{plays / n:.1f} cards played, {events / n:.1f} events"
    )
    click.echo(f"  speed: {games / elapsed:,.0f} matches/s ({elapsed:.2f} s)")
