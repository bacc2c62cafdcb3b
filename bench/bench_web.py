"""page_weight: what each page of the web client downloads, uncompressed and gzipped.

Follows the static and dynamic ``import`` statements of ``service/web/static``
from ``main.js`` for each page (every page also loads ``index.html`` and
``style.css``), so the numbers are what a phone fetches on a first visit.
Goal (issue 16): the whole client under 100 KB gzipped; each page is shown
too. Pages are read from main.js's route table (``PAGES``), so a new page
module is weighed without editing this file. Writes bench/results/web.json.

    .venv/bin/python -m bench web
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from bench.results_file import merge_results

STATIC = Path(__file__).resolve().parents[1] / "service" / "web" / "static"
RESULTS = Path(__file__).parent / "results" / "web.json"
GOAL_GZIP_BYTES = 100_000
IMPORT = re.compile(r"""(?:from\s+|import\s*\(\s*)["']\./([\w.-]+\.js)["']""")
# main.js's PAGES rows: [/pattern/, "./module.js", "function", "Title", ...]
PAGE_ROW = re.compile(
    r"\[/\^(?P<pattern>.*?)\$/,\s*\"\./(?P<module>[\w.-]+\.js)\",\s*\"\w+\",\s*\"(?P<title>[^\"]+)\""
)


def pages() -> dict[str, str]:
    """Page title (and address) -> its module, from main.js's route table."""
    found = {}
    for m in PAGE_ROW.finditer((STATIC / "main.js").read_text()):
        address = m["pattern"].replace("\\/", "/").replace("([^/]+)", "{id}").replace("?", "")
        found[f"{m['title'].lower()} {address or '/'}"] = m["module"]
    return found


PAGES = pages()


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
        if name == "main.js":  # its page modules appear as strings in PAGES, not imports
            found = [m for m in found if m not in PAGES.values()]
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
    size, whole = _weigh(everything)
    rows.append(
        {"page": "whole client", "files": len(everything), "bytes": size, "gzip_bytes": whole}
    )
    print(f"{'page':<30}{'files':>6}{'bytes':>9}{'gzip':>8}")
    for r in rows:
        print(f"{r['page']:<30}{r['files']:>6}{r['bytes']:>9}{r['gzip_bytes']:>8}")
    print(
        f"whole client gzipped: {whole} bytes, goal < {GOAL_GZIP_BYTES}:"
        f" {'ok' if whole < GOAL_GZIP_BYTES else 'OVER'}"
    )
    merge_results(
        RESULTS,
        {"goal_gzip_bytes": GOAL_GZIP_BYTES, "goal_met": whole < GOAL_GZIP_BYTES, "pages": rows},
    )


if __name__ == "__main__":
    main()
