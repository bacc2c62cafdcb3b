"""Only the store reads the ``events`` table: every other module asks the one
reader of the log (``service.store.matchlog``; docs/event-store.md).

The check looks at the string literals of every module of ``service/`` and
``workers/`` outside ``service/store/`` (so prose in comments is no hit, and
SQL written anywhere in a module is): a ``FROM``/``JOIN`` of ``events``, the
``events_position_seq`` sequence, or a JSON path into an event's ``data``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RAW_READ = re.compile(
    r"\b(FROM|JOIN|INTO|UPDATE)\s+events\b(?!_)"  # the table (not tournament_events, ...)
    r"|events_position_seq"  # the log's sequence: its last position
    r"|\bdata\s*->"  # a JSON path into a stored event
)


def _literals(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
    return sorted(found)


def raw_reads(root: Path) -> list[str]:
    """``path:line: text`` of each string literal outside the store that reads the log."""
    hits = []
    for package in ("service", "workers"):
        for path in sorted((root / package).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name.startswith("service/store/"):
                continue
            for line, text in _literals(ast.parse(path.read_text(), filename=name)):
                match = RAW_READ.search(text)
                if match is not None:
                    hits.append(f"{name}:{line}: ...{text[max(0, match.start() - 30) :][:80]!r}")
    return hits


def test_no_module_outside_the_store_reads_the_events_table_itself() -> None:
    hits = raw_reads(ROOT)
    assert hits == [], "raw reads of the match log outside service/store/:\n" + "\n".join(hits)


def test_the_check_finds_a_raw_read_in_any_shape(tmp_path: Path) -> None:
    module = tmp_path / "workers" / "projections" / "new.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "A = 'SELECT 1 FROM events WHERE x'\n"
        "B = f\"SELECT c.data ->> 'ladder_id' FROM {t}\"\n"
        "C = '''SELECT last_value\n FROM events_position_seq'''\n"
        "D = 'SELECT 1 FROM tournament_events'  # another stream's table: not the log\n"
        "E = 'built from events alone'  # prose\n"
    )
    (tmp_path / "service").mkdir()
    assert [hit.split(": ", 1)[0] for hit in raw_reads(tmp_path)] == [
        "workers/projections/new.py:1",
        "workers/projections/new.py:2",
        "workers/projections/new.py:3",
    ]
