"""``matcha tournament``: try a format with bots before announcing it; export one as TRF.

    matcha tournament --format swiss --players 24 --rounds 5 --seed 7
    matcha tournament --format round-robin --players 8 --cycles 2
    matcha tournament --format arena --players 30 --minutes 60 --bots heuristic,random
    matcha tournament export TOURNAMENT_ID > cup.trf

Without a subcommand the whole tournament runs in memory through the same
engines as the service (``service.tournaments.simulate``): every game a real
match between two bots; it prints the final standings with the tie-break
columns. ``export`` writes a tournament of the service as TRF-2026.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path

import click
from psycopg import AsyncConnection
from tqdm import tqdm  # type: ignore[import-untyped]

from schemas.rules import RULESETS
from schemas.tournaments import Arena, Format, RoundRobin, Swiss
from service.bots import BOTS
from service.cli_defaults import database_options
from service.cli_defaults import database_url as database_url_or_local
from service.errors import RuleError
from service.tournaments import berger, store, trf
from service.tournaments.evolve import fold
from service.tournaments.simulate import BotEntrant, Run, simulate
from service.tournaments.standings import standings
from service.tournaments.tiebreaks import LABELS
from service.tournaments.trf_export import export
from service.tournaments.trf_routes import names_of


def _format(
    kind: str, rounds: int, cycles: int, minutes: int, bye_points: float, avoid_repeats: bool
) -> Format:
    if kind == "swiss":
        return Swiss(rounds=rounds, bye_points=bye_points)
    if kind == "round-robin":
        return RoundRobin(cycles=cycles)
    return Arena(minutes=minutes, avoid_repeats=avoid_repeats)


def _expected_games(fmt: Format, players: int) -> int | None:
    match fmt:
        case Swiss(rounds=rounds):
            return rounds * (players // 2)
        case RoundRobin(cycles=cycles):
            return cycles * players * (players - 1) // 2
    return None


@click.group("tournament", invoke_without_command=True)
@click.option(
    "--format",
    "kind",
    type=click.Choice(["swiss", "round-robin", "arena"]),
    default="swiss",
    show_default=True,
)
@click.option("--players", type=click.IntRange(2, 2000), default=16, show_default=True)
@click.option("--rounds", type=int, default=5, show_default=True, help="Swiss rounds.")
@click.option("--cycles", type=int, default=1, show_default=True, help="Round-robin cycles.")
@click.option("--minutes", type=int, default=60, show_default=True, help="Arena length.")
@click.option("--bye-points", type=float, default=1.0, show_default=True, help="Swiss bye.")
@click.option("--avoid-repeats", is_flag=True, help="Arena: never pair two who have met.")
@click.option(
    "--tiebreaks",
    default=None,
    help="Comma-separated, in order (default: the format's usual ones): " + ", ".join(LABELS),
)
@click.option(
    "--bots",
    default="heuristic,random",
    show_default=True,
    help="Bots the players use, in turn (" + ", ".join(sorted(BOTS)) + ").",
)
@click.option(
    "--ruleset", type=click.Choice(sorted(RULESETS)), default="standard", show_default=True
)
@click.option(
    "--no-show-rate",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of matches a player does not turn up for (a forfeit).",
)
@click.option("--seed", type=int, default=None, help="Seed of the run (default: random).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.pass_context
def tournament(
    ctx: click.Context,
    kind: str,
    players: int,
    rounds: int,
    cycles: int,
    minutes: int,
    bye_points: float,
    avoid_repeats: bool,
    tiebreaks: str | None,
    bots: str,
    ruleset: str,
    no_show_rate: float,
    seed: int | None,
    quiet: bool,
) -> None:
    """Run a whole tournament of bots and print the final standings (or: export)."""
    if ctx.invoked_subcommand is not None:
        return
    names = [b.strip() for b in bots.split(",") if b.strip()]
    unknown = [b for b in names if b not in BOTS]
    if not names or unknown:
        raise click.BadParameter(
            f"unknown bot(s) {unknown}; choose from {sorted(BOTS)}", param_hint="--bots"
        )
    rng = random.Random(seed)
    entries = [
        BotEntrant(
            f"{names[i % len(names)]}-{i + 1:02}",
            float(round(rng.gauss(1500, 150))),
            BOTS[names[i % len(names)]],
        )
        for i in range(players)
    ]
    fmt = _format(kind, rounds, cycles, minutes, bye_points, avoid_repeats)
    order = None if tiebreaks is None else tuple(t.strip() for t in tiebreaks.split(","))
    expected = _expected_games(fmt, players)
    bar = tqdm(total=expected, disable=quiet, unit="game", desc=f"{kind} of {players}")

    def progress(run: Run) -> None:
        bar.update(1)
        if isinstance(fmt, Arena) and run.state.ends_at is not None:
            bar.set_postfix_str(f"{len(run.state.games)} games paired")

    started = time.perf_counter()
    try:
        run = simulate(
            fmt,
            entries,
            rng,
            ruleset=ruleset,
            tiebreaks=order,
            no_show_rate=no_show_rate,
            on_game=progress,
        )
    except RuleError as error:
        raise click.UsageError(error.detail) from error
    finally:
        bar.close()
    elapsed = time.perf_counter() - started
    state = run.state
    detail = {
        "swiss": f"{rounds} rounds, bye {bye_points:g}",
        "round-robin": f"{cycles} cycle(s), {berger.rounds_in(players, cycles)} rounds",
        "arena": f"{minutes} minutes{', no repeats' if avoid_repeats else ''}",
    }[kind]
    click.echo(
        f"{kind}, {players} players ({bots}), {detail}, ruleset {ruleset}, seed {seed}: "
        f"{run.matches} matches in {elapsed:.1f} s"
    )
    labels = [LABELS[t] for t in state.tiebreaks]
    header = f"{'#':>3}  {'player':<16} {'rating':>6} {'pts':>5} {'W-D-L':>8} " + " ".join(
        f"{label:>6}" for label in labels
    )
    click.echo(header)
    click.echo("-" * len(header))
    for row in standings(state):
        values = " ".join("     -" if v is None else f"{v:6g}" for v in row.tiebreaks)
        mark = " (withdrew)" if row.withdrawn else " *streak" if row.on_streak else ""
        click.echo(
            f"{row.rank:>3}  {row.player_id:<16} {row.rating:6.0f} {row.points:5g} "
            f"{f'{row.wins}-{row.draws}-{row.losses}':>8} {values}{mark}"
        )


async def _export(url: str, tournament_id: str) -> str:
    async with await AsyncConnection.connect(url, autocommit=True) as conn:
        events = await store.load(conn, tournament_id)
        if not events:
            raise click.UsageError(f"No tournament has the id {tournament_id!r}.")
        state = fold(e.event for e in events)
        names = await names_of(conn, [*state.entrants, state.organiser])
    return trf.write(export(state, names))


@tournament.command("export")
@click.argument("tournament_id")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None)
@database_options
def export_command(
    tournament_id: str, output: Path | None, database_url: str | None, data_dir: Path | None
) -> None:
    """Write the tournament as a TRF-2026 file (stdout, or --output)."""
    text = asyncio.run(_export(database_url_or_local(database_url, data_dir), tournament_id))
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
        click.echo(f"wrote {output} ({text.count(chr(10))} lines)", err=True)
