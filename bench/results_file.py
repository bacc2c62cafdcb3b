"""Write a benchmark's figures into ``bench/results/<area>.json``.

Several benchmarks write into one area's file (``workers.json`` holds the Elo,
archive, Glicko-2 and projection-lag figures, each from its own module), so a
benchmark merges its keys into the file rather than replacing it: a key it
measured is replaced, every other key is kept as the last run left it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).parent / "results"


def merge_results(path: Path, figures: dict[str, Any]) -> dict[str, Any]:
    """Merge ``figures`` into the JSON object at ``path`` (created if missing); the result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        known = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    known.update(figures)
    path.write_text(json.dumps(known, indent=2) + "\n")
    return known
