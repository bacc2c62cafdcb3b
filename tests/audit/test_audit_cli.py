"""``matcha audit`` as an organiser runs it: a real process on a real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from audit_forgery import Forger, append_batches, good_match, rich
from audit_matches import play

from service.store.events import EventStore

pytestmark = pytest.mark.anyio


def matcha(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "audit", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


async def test_one_match_report_as_text_and_json(finished: Any, database_url: str) -> None:
    match_id = finished[0]

    text = matcha(database_url, match_id)
    as_json = matcha(database_url, match_id, "--json")

    assert text.returncode == 0, text.stderr
    assert f"Audit of match {match_id} (finished)" in text.stdout
    assert "Hash chain: consistent" in text.stdout
    assert "Verdict: consistent" in text.stdout
    assert as_json.returncode == 0
    report = json.loads(as_json.stdout)
    assert report["match_id"] == match_id
    assert report["verdict"]["consistent"] is True


async def test_a_season_with_one_forged_match_exits_1_and_names_it(
    store: EventStore, database_url: str, admin_database_url: str
) -> None:
    import random

    ids = []
    for n in range(3):
        seed, batches = play(random.Random(100 + n), match_id=f"s-{n}", ladder_id="season")
        await append_batches(store, f"s-{n}", seed, batches)
        ids.append(f"s-{n}")
    seed, batches = good_match("other", rich)
    await append_batches(store, "other", seed, batches)
    forger = Forger(admin_database_url, "s-1")
    rows = await forger.rows()
    reveal = next(r for r in rows if r["type"] == "round_revealed")
    data = reveal["data"]
    data["outcomes"][0]["winner"] = 1 if data["outcomes"][0]["winner"] != 1 else 0
    await forger.set_data(reveal["version"], data)

    season = matcha(database_url, "--ladder", "season")
    everything = matcha(database_url, "--all", "--json")
    usage = matcha(database_url)

    assert season.returncode == 1, season.stderr
    assert "Audited 3 matches (ladder season): 2 consistent, 1 inconsistent" in season.stdout
    assert f"s-1 (finished): inconsistent: chain broken at version {reveal['version']}" in (
        season.stdout
    )
    assert "s-0" not in season.stdout
    assert "auditing" in season.stderr  # the progress bar
    summary = json.loads(everything.stdout)
    assert everything.returncode == 1
    assert (summary["audited"], summary["inconsistent"]) == (4, 1)
    assert [m["match_id"] for m in summary["matches"] if not m["consistent"]] == ["s-1"]
    assert usage.returncode == 2
