"""Migrations: idempotent, safe from concurrent processes, runnable from the console."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest
from click.testing import CliRunner

from service.store.db import scratch_database, with_database
from service.store.migrate import MIGRATIONS_DIR, apply_migrations, pending_migrations

SCHEMA_SQL = """
SELECT table_name, column_name, data_type FROM information_schema.columns
WHERE table_schema = 'public' ORDER BY 1, 2
"""


def _schema(url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(url) as conn:
        return conn.execute(SCHEMA_SQL).fetchall()


@pytest.fixture
def empty_database_url(pg_server_url: str) -> Iterator[str]:
    with scratch_database(pg_server_url, "t_empty_") as name:
        yield with_database(pg_server_url, name)


def test_migrations_applied_twice_change_nothing_the_second_time(
    admin_database_url: str,
) -> None:
    before = _schema(admin_database_url)
    assert pending_migrations(admin_database_url) == []

    apply_migrations(admin_database_url)

    assert _schema(admin_database_url) == before


def test_the_app_role_can_run_migrations_when_none_are_pending(database_url: str) -> None:
    apply_migrations(database_url)

    assert pending_migrations(database_url) == []


def test_every_migration_file_is_applied_in_order(empty_database_url: str) -> None:
    files = sorted(p.stem for p in MIGRATIONS_DIR.glob("*.sql") if ".rollback" not in p.name)
    assert files[0] == "0001_events"
    assert pending_migrations(empty_database_url) == files

    apply_migrations(empty_database_url)

    assert pending_migrations(empty_database_url) == []


def test_two_processes_migrating_one_empty_database_at_once_both_succeed(
    empty_database_url: str,
) -> None:
    code = (
        "import sys; from service.store.migrate import apply_migrations;"
        " apply_migrations(sys.argv[1])"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", code, empty_database_url], stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    outcomes = [(run.wait(timeout=120), run.stderr.read() if run.stderr else b"") for run in runs]

    assert [rc for rc, _ in outcomes] == [0, 0, 0], outcomes
    assert pending_migrations(empty_database_url) == []
    with psycopg.connect(empty_database_url) as conn:
        applied = conn.execute("SELECT count(*) FROM _yoyo_migration").fetchone()
    assert applied == (len(list(MIGRATIONS_DIR.glob("0*.sql"))),)


def test_matcha_migrate_applies_then_reports_up_to_date(empty_database_url: str) -> None:
    from service.cli import main

    runner = CliRunner()
    first = runner.invoke(main, ["migrate", "--database-url", empty_database_url])
    second = runner.invoke(main, ["migrate", "--database-url", empty_database_url])

    assert first.exit_code == 0, first.output
    assert "applied" in first.output and "0001_events" in first.output
    assert second.output.strip() == "database is up to date"
