"""``matcha export --ladder ID --out FILE.jsonl``: a ladder's match records, one per line.

Every finished (ended or annulled) match of the ladder, oldest first, as the
portable match record of docs/replays.md (headers with ratings where known,
and every event with its chain hashes). The file is appendable: matches
already in it are skipped, so running the command again adds only the new ones.
An operator's command (it reads the database directly), so records are full
even on a ladder that hides hands in replays.
"""

from __future__ import annotations

from pathlib import Path

import click
import msgspec
import psycopg
from tqdm import tqdm  # type: ignore[import-untyped]

from service.cli_defaults import database_options, resolve_ladder
from service.cli_defaults import database_url as local_or_given
from service.replays import encode_record, record_from_log, record_with_ratings
from service.store import matchlog
from service.store.ops import run


class _Line(msgspec.Struct):
    """Just enough of a record line to know which match it is."""

    class _Headers(msgspec.Struct):
        match_id: str

    headers: _Headers


_line_decoder = msgspec.json.Decoder(_Line)


def already_exported(path: Path) -> set[str]:
    """Match ids of the records already in ``path`` (a torn last line is ignored)."""
    if not path.exists():
        return set()
    seen: set[str] = set()
    with path.open("rb") as f:
        for line in f:
            try:
                seen.add(_line_decoder.decode(line).headers.match_id)
            except msgspec.DecodeError:
                continue
    return seen


def export_ladder(
    conn: psycopg.Connection, ladder_id: str, out: Path, *, progress: bool = True
) -> tuple[int, int]:
    """Append the ladder's missing records to ``out``: (written, skipped)."""
    matches = run(conn, matchlog.finished_matches_of_ladder(ladder_id))
    seen = already_exported(out)
    todo = [m for m in matches if m not in seen]
    written = 0
    with out.open("ab") as f:
        # A previous run killed mid-line leaves a torn last line: start on a fresh one.
        if f.tell() > 0:
            with out.open("rb") as r:
                r.seek(-1, 2)
                if r.read(1) != b"\n":
                    f.write(b"\n")
        for match_id in tqdm(todo, desc=f"ladder {ladder_id}", unit="match", disable=not progress):
            record = record_from_log(conn, match_id)
            if record is None:
                continue
            f.write(encode_record(record_with_ratings(conn, record)) + b"\n")
            written += 1
    return written, len(matches) - len(todo)


@click.command("export")
@click.option("--ladder", "ladder_id", required=True, help="The ladder's id or name.")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The JSON Lines file to append to.",
)
@database_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
def export(
    ladder_id: str, out: Path, database_url: str | None, data_dir: Path | None, quiet: bool
) -> None:
    """Export a ladder's finished matches as match records (JSON Lines, appendable).

    An unknown ladder is a usage error (exit status 2)."""
    url = local_or_given(database_url, data_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        ladder_id = resolve_ladder(conn, ladder_id)
        written, skipped = export_ladder(conn, ladder_id, out, progress=not quiet)
    click.echo(f"{out}: {written} record(s) written, {skipped} already there")
