"""The operations guide names every setting the code reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ENV_NAME = re.compile(r'"((?:MATCHA|PROMETHEUS)_[A-Z_]+|DATABASE_URL|REDIS_URL)"')


def test_every_environment_variable_the_service_reads_is_documented() -> None:
    read: set[str] = set()
    for path in [*(ROOT / "service").rglob("*.py"), *(ROOT / "workers").rglob("*.py")]:
        read |= set(_ENV_NAME.findall(path.read_text()))
    assert {"DATABASE_URL", "REDIS_URL", "MATCHA_ADMIN_TOKEN"} <= read
    guide = (ROOT / "docs" / "operations.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", guide, flags=re.MULTILINE))
    missing = read - documented
    assert not missing, f"add to the configuration table of docs/operations.md: {sorted(missing)}"
