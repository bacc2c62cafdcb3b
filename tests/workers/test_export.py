"""matcha export: a ladder's finished matches, one record per line, appendable."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from workers_harness import finish_match, new_ladder

from service.replays import check_record, decode_record
from service.store import EventStore
from workers.export import export

pytestmark = pytest.mark.anyio


async def test_export_appends_only_new_matches_and_survives_a_torn_line(
    store: EventStore, conn: psycopg.Connection, database_url: str, tmp_path: Path
) -> None:
    ladder_id = new_ladder(conn)
    first = [await finish_match(store, ladder_id, "ann", "bob", w) for w in (0, None)]
    await finish_match(store, new_ladder(conn), "ann", "bob", 1)  # another ladder's match
    out = tmp_path / "ladder.jsonl"
    runner = CliRunner()
    args = ["--ladder", ladder_id, "--out", str(out), "--database-url", database_url]

    done = runner.invoke(export, args)
    assert done.exit_code == 0, done.output
    assert "2 record(s) written, 0 already there" in done.output
    lines = out.read_bytes().splitlines()
    assert [decode_record(line).headers.match_id for line in lines] == first
    assert decode_record(lines[1]).headers.result == "1/2-1/2"
    assert all(check_record(decode_record(line)).chain == "consistent" for line in lines)

    third = await finish_match(store, ladder_id, "bob", "ann", 0)
    with out.open("ab") as f:
        f.write(b'{"headers": {"match_')  # a run killed mid-line
    done = runner.invoke(export, [*args, "--quiet"])
    assert done.exit_code == 0, done.output
    assert "1 record(s) written, 2 already there" in done.output
    lines = out.read_bytes().splitlines()
    assert decode_record(lines[-1]).headers.match_id == third
    assert len(lines) == 4  # the torn line stays, the new record starts on a line of its own

    again = runner.invoke(export, [*args, "--quiet"])
    assert "0 record(s) written, 3 already there" in again.output
    assert (
        runner.invoke(
            export, ["--ladder", "nope", "--out", str(out), "--database-url", database_url]
        ).exit_code
        != 0
    )
