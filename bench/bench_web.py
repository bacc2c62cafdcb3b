"""page_weight: what each page of the web client downloads, uncompressed and gzipped.

Follows the static and dynamic ``import`` statements of ``service/web/static``
from ``main.js`` for each page (every page also loads ``index.html`` and
``style.css``), so the numbers are what a phone fetches on a first visit.
Goal: under 60 KB uncompressed per page, and for the whole client.
Writes bench/results/web.json.

    .venv/bin/python -m bench web
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from bench.results_file import merge_results

STATIC = Path(__file__).resolve().parents[1] / "service" / "web" / "static"
RESULTS = Path(__file__).parent / "results" / "web.json"
GOAL_BYTES = 60_000
IMPORT = re.compile(r"""(?:from\s+|import\s*\(\s*)["']\./([\w.-]+\.js)["']""")
# The page modules main.js imports on demand, by address.
PAGES = {
    "lobby /": "lobby.js",
    "play /play/{id}": "match.js",
    "watch /watch/{id}": "match.js",
    "replay /replay/{id}": "replay.js",
}


def _closure(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        text = (STATIC / name).read_text()
        # main.js imports every page lazily: follow only the page asked for.
        found = [m for m in IMPORT.findall(text) if not (name == "main.js" and m in PAGES.values())]
        todo.extend(found)
    return seen


def _weigh(files: set[str]) -> tuple[int, int]:
    raw = b"".join((STATIC / f).read_bytes() for f in sorted(files))
    return len(raw), len(gzip.compress(raw, 9))


def main() -> None:
    rows = []
    for page, module in PAGES.items():
        files = {"index.html", "style.css"} | _closure("main.js") | _closure(module)
        size, packed = _weigh(files)
        rows.append({"page": page, "files": len(files), "bytes": size, "gzip_bytes": packed})
    everything = {p.name for p in STATIC.iterdir() if p.is_file()}
    size, packed = _weigh(everything)
    rows.append(
        {"page": "whole client", "files": len(everything), "bytes": size, "gzip_bytes": packed}
    )
    print(f"{'page':<22}{'files':>6}{'bytes':>9}{'gzip':>8}  goal < {GOAL_BYTES}")
    for r in rows:
        ok = "ok" if r["bytes"] < GOAL_BYTES else "OVER"
        print(f"{r['page']:<22}{r['files']:>6}{r['bytes']:>9}{r['gzip_bytes']:>8}  {ok}")
    merge_results(RESULTS, {"goal_bytes": GOAL_BYTES, "pages": rows})


if __name__ == "__main__":
    main()
