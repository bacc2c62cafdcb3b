"""A command's update of its match_summaries row can be HOT (heap-only): no index
of the table holds a column the command's upsert changes (only ``status`` does,
once, at the end), and its pages keep room for the row's next version. Checked on
the migrated schema, because a HOT update is PostgreSQL's choice at run time."""

from __future__ import annotations

import re

import psycopg

from service.matches.summaries import Summary, upsert_statement

INDEXED_COLUMNS = """
SELECT DISTINCT a.attname
  FROM pg_index i
  JOIN pg_class t ON t.oid = i.indrelid
  JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(i.indkey)
 WHERE t.relname = 'match_summaries'
"""


def _columns_a_command_sets() -> set[str]:
    sql, _ = upsert_statement(
        Summary(match_id="m", ladder_id=None, ruleset="duel", players=("a", "b"))
    )
    assignments = sql.split("DO UPDATE", 1)[1].split("WHERE", 1)[0]
    return set(re.findall(r"(\w+)\s*=", assignments))


def test_given_the_migrated_schema_then_no_index_holds_a_column_a_command_changes(
    admin_database_url: str,
) -> None:
    with psycopg.connect(admin_database_url) as conn:
        indexed = {row[0] for row in conn.execute(INDEXED_COLUMNS).fetchall()}
        (options,) = conn.execute(
            "SELECT reloptions FROM pg_class WHERE relname = 'match_summaries'"
        ).fetchone() or (None,)

    changed_by_every_command = _columns_a_command_sets() - {"status"}
    assert {"hand", "tokens", "last_version", "updated_at"} <= changed_by_every_command
    assert indexed & changed_by_every_command == set()
    assert options is not None and any(o.startswith("fillfactor=") for o in options)
