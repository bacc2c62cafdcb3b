"""``matcha flags list|show``: the fair-play flags for an admin at the shell
(whoever holds the database URL reads them, as with ``matcha audit``)."""

from __future__ import annotations

from pathlib import Path

import click
import msgspec
import psycopg

from service.cli_defaults import database_options
from service.cli_defaults import database_url as database_url_or_local
from service.errors import NotFound
from service.fairplay import ladder
from service.fairplay.service import FlagState, decisions, names_of, state_of
from service.store.ops import run


def _line(state: FlagState) -> str:
    f = state.flag
    numbers = " ".join(f"{k}={v:g}" for k, v in f.numbers.items())
    decided = "open" if state.decided is None else state.decided.decision
    return (
        f"{f.flag_id}  {f.weight:8.2f}  {decided:<9}  {f.signal:<15}  "
        f"{' vs '.join(state.names.get(p, p) for p in f.players)}  {numbers}"
        f"  ({len(f.matches)} matches)"
    )


@click.group("flags")
def flags() -> None:
    """Fair-play flags (docs/fairplay.md): list them by weight, show one."""


@flags.command("list")
@click.option("--all", "every", is_flag=True, help="Decided flags too (default: open ones).")
@click.option("--ladder", "ladder_id", help="Only this ladder's flags.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@database_options
def list_flags(
    every: bool,
    ladder_id: str | None,
    as_json: bool,
    database_url: str | None,
    data_dir: Path | None,
) -> None:
    """Open flags, heaviest first: id, weight, decision, signal, players, numbers."""
    with psycopg.connect(database_url_or_local(database_url, data_dir)) as conn:
        found = [f for f in run(conn, ladder.every_flag()) if ladder_id in (None, f.ladder_id)]
        decided = run(conn, decisions())
        names = run(conn, names_of(found))
    states = [state_of(f, decided, names) for f in found]
    states = [s for s in states if every or s.decided is None]
    if as_json:
        click.echo(msgspec.json.encode(states).decode())
        return
    if not states:
        click.echo("No open flags." if not every else "No flags.")
    for state in states:
        click.echo(_line(state))


@flags.command("show")
@click.argument("flag_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@database_options
def show(flag_id: str, as_json: bool, database_url: str | None, data_dir: Path | None) -> None:
    """One flag: its numbers, its decision and each match behind it (with its audit)."""
    with psycopg.connect(database_url_or_local(database_url, data_dir)) as conn:
        found = run(conn, ladder.one_flag(flag_id))
        decided = run(conn, decisions())
        names = run(conn, names_of([] if found is None else [found]))
    if found is None:
        raise NotFound(f"No flag has the id {flag_id!r} (see `matcha flags list`).")
    state = state_of(found, decided, names)
    if as_json:
        click.echo(msgspec.json.encode(state).decode())
        return
    click.echo(_line(state))
    click.echo(f"ladder: {found.ladder_id}")
    if state.decided is not None:
        d = state.decided
        click.echo(f"decision: {d.decision} by {d.admin}: {d.reason}")
    for match_id in found.matches:
        click.echo(f"  {match_id}  matcha audit {match_id}")
