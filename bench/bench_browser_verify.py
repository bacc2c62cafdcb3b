"""browser_verify_ms: the web client's own check of a whole finished match, in Chromium.

Runs ``service/web/static/evidence.js`` (chain, receipt, seed commitment, every deal,
checkpoint proof) on ``docs/evidence-vectors/record-good.json`` (a whole duel, 43
events) in headless Chromium, 30 times, served by Playwright's router (no app, no
database). Budget (issue 29): at most 50 ms on this machine. The first run pays for
importing the key and warming up and is reported on its own. Writes
bench/results/evidence.json (key ``browser_verify_ms``).

    .venv/bin/python -m bench browser_verify
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from bench.results_file import merge_results

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "service" / "web" / "static"
VECTORS = ROOT / "docs" / "evidence-vectors"
RESULTS = Path(__file__).parent / "results" / "evidence.json"
CHROMIUM = Path(os.environ.get("MATCHA_CHROMIUM", "/usr/bin/chromium"))
BUDGET_MS = 50.0
RUNS = 30
BASE = "http://localhost:8766"


def _serve(route: Any) -> None:
    path = route.request.url.removeprefix(BASE)
    if path == "/":
        route.fulfill(status=200, content_type="text/html", body="<!doctype html>")
        return
    folder, _, name = path.lstrip("/").partition("/")
    file = (STATIC if folder == "static" else VECTORS) / name
    kind = "text/javascript" if file.suffix == ".js" else "application/json"
    route.fulfill(status=200, content_type=kind, body=file.read_bytes())


def main() -> None:
    if not CHROMIUM.exists():
        print(f"skipped: no Chromium at {CHROMIUM}")
        return
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page()
        page.route(f"{BASE}/**", _serve)
        page.goto(f"{BASE}/")
        times: list[float] = page.evaluate(
            """async (runs) => {
              const E = await import('/static/evidence.js');
              const record = await (await fetch('/vectors/record-good.json')).json();
              const keys = await (await fetch('/vectors/keys.json')).json();
              const times = [];
              for (let i = 0; i < runs; i += 1) {
                const v = await E.verifyRecord(record, { keys });
                if (!v.ok) throw new Error(JSON.stringify(v.problems));
                times.push(v.ms);
              }
              return times;
            }""",
            RUNS,
        )
        version = browser.version
        browser.close()
    first, rest = times[0], times[1:]
    median = statistics.median(rest)
    print(f"{'chromium':<24}{version}")
    print(f"{'first run':<24}{first:8.1f} ms")
    spread = f"(min {min(rest):.1f}, max {max(rest):.1f})"
    print(f"{'median of the rest':<24}{median:8.1f} ms   {spread}")
    print(f"budget {BUDGET_MS:.0f} ms: {'ok' if max(first, median) <= BUDGET_MS else 'OVER'}")
    merge_results(
        RESULTS,
        {
            "browser_verify_ms": round(median, 2),
            "browser_verify_first_ms": round(first, 2),
            "browser_verify_budget_ms": BUDGET_MS,
            "browser_verify_events": 43,
            "chromium": version,
        },
    )


if __name__ == "__main__":
    main()
