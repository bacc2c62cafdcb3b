"""Every ``matcha`` subcommand answers a mistake with one clear line on stderr and
its exit status (2: usage, not found, no database; 1: a check that failed), never
a traceback: each is run with something that does not exist and with no database.
The table below names every subcommand of ``service.cli.COMMANDS``; a new one
without a row fails the first test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
MISSING_DB = "postgresql://postgres@127.0.0.1:5432/matcha_no_such_database"

# subcommand -> (arguments naming something that does not exist, the status, words
# the sentence must hold); "{tmp}" is a fresh folder of the test's own.
BAD_ID: dict[str, tuple[list[str], int, str]] = {
    "api": (["--port", "99999"], 2, "99999"),
    "audit": (["no-such-match"], 2, "no-such-match"),
    "bots": (["no-such-bot", "random"], 2, "no-such-bot"),
    "cluster": (["no-such-verb"], 2, "no-such-verb"),
    "export": (["--ladder", "no-such-ladder", "--out", "{tmp}/out.jsonl"], 2, "no-such-ladder"),
    "flags": (["show", "no-such-flag"], 2, "no-such-flag"),
    "keys": (["no-such-verb"], 2, "no-such-verb"),
    "migrate": (["--database-url", MISSING_DB], 2, "matcha_no_such_database"),
    "run": (["--data-dir", "/proc/no-such-folder"], 2, "/proc/no-such-folder"),
    "schemas": (["--out", "/proc/no-such-folder"], 2, "/proc/no-such-folder"),
    "simulate": (["--bot", "no-such-bot"], 2, "no-such-bot"),
    "tournament": (["--bots", "no-such-bot", "--players", "4"], 2, "no-such-bot"),
    "verify": (["{tmp}/no-such-record.json"], 2, "no-such-record.json"),
    "witness": (
        ["--service", "http://127.0.0.1:1", "--keys", "{tmp}/no-such-keys.json"],
        2,
        "no-such-keys.json",
    ),
    "worker": (["--poll", "no-such-number"], 2, "no-such-number"),
}

# subcommand -> arguments that make it need the database, run with MISSING_DB
NO_DATABASE: dict[str, list[str]] = {
    "audit": ["--all"],
    "export": ["--ladder", "x", "--out", "{tmp}/out.jsonl"],
    "migrate": [],
    "flags": ["list"],
    "worker": ["--burst", "--redis-url", "redis://127.0.0.1:6379/0"],
    "api": ["--port", "0"],
}


def matcha(args: list[str], tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MATCHA_", "DATABASE"))}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *[a.replace("{tmp}", str(tmp)) for a in args]],
        capture_output=True,
        text=True,
        env={**clean, "MATCHA_DATA_DIR": str(tmp / "data"), **env},
        cwd=tmp,
        timeout=120,
    )


def one_sentence(done: subprocess.CompletedProcess[str]) -> str:
    """The one line on stderr (warnings of libraries aside), and no traceback anywhere."""
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    said = [line for line in lines if "Warning" not in line and not line.startswith(" ")]
    assert len(said) >= 1, done
    assert len(said) <= 3, f"more than a sentence: {done.stderr}"
    return " ".join(said)


def test_every_subcommand_has_a_row() -> None:
    assert sorted(BAD_ID) == sorted(COMMANDS)


@pytest.mark.parametrize("command", sorted(BAD_ID))
def test_given_something_that_does_not_exist_each_subcommand_says_so_in_one_line(
    command: str, tmp_path: Path, database_url: str
) -> None:
    args, status, words = BAD_ID[command]
    done = matcha([command, *args], tmp_path, {"DATABASE_URL": database_url})
    said = one_sentence(done)
    assert done.returncode == status, (done.returncode, said)
    assert words in said, said


@pytest.mark.parametrize("command", sorted(NO_DATABASE))
def test_given_no_database_each_subcommand_that_needs_one_says_so_and_exits_2(
    command: str, tmp_path: Path
) -> None:
    done = matcha([command, *NO_DATABASE[command]], tmp_path, {"DATABASE_URL": MISSING_DB})
    said = one_sentence(done)
    assert done.returncode == 2, said
    assert "database" in said.lower(), said
    nothing = matcha([command, *NO_DATABASE[command]], tmp_path, {})
    said = one_sentence(nothing)
    assert nothing.returncode == 2, said
    assert "database" in said.lower() or "DATABASE_URL" in said, said


def test_given_an_unmigrated_database_audit_says_to_migrate(
    tmp_path: Path, pg_server_url: str
) -> None:
    done = matcha(["audit", "--all"], tmp_path, {"DATABASE_URL": pg_server_url})
    said = one_sentence(done)
    assert done.returncode == 2 and "matcha migrate" in said, said
