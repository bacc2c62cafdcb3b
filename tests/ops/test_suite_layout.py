"""`make test` runs every folder in one pytest session: guard what would stop it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_outside_packages_share_a_name() -> None:
    """In pytest's default import mode a test folder without __init__.py imports its
    modules by bare name, so two `test_x.py` in two such folders collide and the
    whole run stops at collection (each folder alone still passes)."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for folder in sorted(p for p in TESTS.iterdir() if p.is_dir()):
        if (folder / "__init__.py").exists():
            continue
        for module in folder.glob("*.py"):
            if module.name != "conftest.py":
                by_name[module.name].append(folder.name)
    clashes = {name: folders for name, folders in by_name.items() if len(folders) > 1}
    assert not clashes, f"rename one of each (or add __init__.py): {clashes}"
