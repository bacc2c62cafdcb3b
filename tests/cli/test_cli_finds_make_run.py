"""The console commands after `make run`: they find its servers by themselves, take
names wherever they take ids, and an unknown name is an error (exit status 2).

The servers are started here as `matcha run` starts them (service.embedded, in
``<cwd>/var``), and the commands run as a newcomer runs them: real processes, in
that folder, with no DATABASE_URL or REDIS_URL in their environment.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from service.embedded import start_postgres, start_redis
from service.store.db import with_database
from service.store.migrate import apply_migrations

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))

pytestmark = pytest.mark.slow

LADDER = "Osaka autumn"


@pytest.fixture(scope="module")
def make_run_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder where `make run` is running: var/postgres (database `matcha`), var/redis,
    one ladder with two finished matches, played by `sen` and `rikyu`."""
    from audit_forgery import append_batches
    from audit_matches import play

    from service.store.db import open_pool
    from service.store.events import EventStore

    here = tmp_path_factory.mktemp("newcomer")
    server_url, pg = start_postgres(here / "var" / "postgres")
    _, redis = start_redis(here / "var" / "redis")
    try:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE matcha")
        admin_url = with_database(server_url, "matcha")
        apply_migrations(admin_url)
        with psycopg.connect(admin_url, autocommit=True) as conn:
            for pid, name in (("p-sen", "sen"), ("p-rikyu", "rikyu")):
                conn.execute(
                    "INSERT INTO players (id, name, token_hash) VALUES (%s, %s, %s)",
                    (pid, name, name.encode()),
                )
            conn.execute(
                "INSERT INTO ladders (id, name, ruleset, rating, created_by)"
                " VALUES ('l-osaka', %s, 'duel', '{}', 'p-sen')",
                (LADDER,),
            )

        async def two_matches() -> None:
            pool = await open_pool(with_database(server_url, "matcha", user="matcha_app"))
            try:
                for n in range(2):
                    seed, batches = play(
                        random.Random(n),
                        match_id=f"osaka-{n}",
                        players=("p-sen", "p-rikyu"),
                        ladder_id="l-osaka",
                    )
                    await append_batches(EventStore(pool), f"osaka-{n}", seed, batches)
            finally:
                await pool.close()

        asyncio.run(two_matches())
        yield here
    finally:
        redis.shutdown()
        pg.cleanup()


def matcha(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.pop("MATCHA_DATA_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_audit_by_ladder_name_finds_the_database_and_audits_its_matches(
    make_run_folder: Path,
) -> None:
    done = matcha(make_run_folder, "audit", "--ladder", LADDER)
    assert done.returncode == 0, done.stderr
    assert f"Audited 2 matches (ladder {LADDER}): 2 consistent" in done.stdout
    # The name ignoring case, the id, and a player by name all reach the same matches.
    for args in (["--ladder", LADDER.upper()], ["--ladder", "l-osaka"], ["--player", "sen"]):
        again = matcha(make_run_folder, "audit", *args)
        assert again.returncode == 0, again.stderr
        assert "Audited 2 matches" in again.stdout


def test_an_unknown_ladder_or_player_name_is_an_error_with_exit_status_2(
    make_run_folder: Path,
) -> None:
    for args in (
        ["audit", "--ladder", "Kyoto spring"],
        ["export", "--ladder", "Kyoto spring", "--out", "x.jsonl"],
        ["audit", "--player", "oribe"],
    ):
        done = matcha(make_run_folder, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "no ladder has the id or name 'Kyoto spring'" in done.stderr or (
            "no player has the id or name 'oribe'" in done.stderr
        ), done.stderr
    told = matcha(make_run_folder, "audit", "--ladder", "Kyoto spring").stderr
    assert repr(LADDER) in told  # the ladders there are, to pick from
    assert not (make_run_folder / "x.jsonl").exists()


def test_export_and_a_burst_worker_run_without_any_url(make_run_folder: Path) -> None:
    done = matcha(make_run_folder, "export", "--ladder", LADDER, "--out", "osaka.jsonl", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "osaka.jsonl: 2 record(s) written, 0 already there" in done.stdout
    lines = (make_run_folder / "osaka.jsonl").read_text().splitlines()
    assert len(lines) == 2

    worked = matcha(make_run_folder, "worker", "--burst", "--no-fork")
    assert worked.returncode == 0, worked.stderr
    # The runners caught up from the log: this ladder rated, its two matches archived.
    assert "caught up: archives 2, ratings 1, flags 2, odds 2, summaries 2" in worked.stdout


def test_migrate_without_any_url_finds_make_runs_database_as_its_owner(
    make_run_folder: Path,
) -> None:
    done = matcha(make_run_folder, "migrate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "database is up to date"


def test_without_make_run_the_commands_say_what_to_do_with_exit_status_2(
    tmp_path: Path,
) -> None:
    for args in (["audit", "--all"], ["export", "--ladder", LADDER, "--out", "o.jsonl"],
                 ["worker", "--burst"], ["migrate"], ["api", "--port", "0"]):  # fmt: skip
        done = matcha(tmp_path, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert "make run" in done.stderr and "--database-url" in done.stderr, done.stderr
