"""README.md's curl walkthrough runs as written against a live server, so it cannot drift.

The commands are read from README.md itself (tests/web/readme_walkthrough.py), the
README's address is replaced by this test's server, and ``var/admin-token`` is where
`make run` keeps it. Every answer must have the shape the README shows.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from readme_walkthrough import run, same_shape, steps
from web_server import Api


def test_the_readme_walkthrough_plays_a_whole_match_as_written(api: Api, tmp_path: Path) -> None:
    if shutil.which("jq") is None or shutil.which("curl") is None:
        pytest.skip("the walkthrough needs curl and jq (apt-get install -y curl jq)")
    assert len(steps()) > 20, "the README's walkthrough block was not found"
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "admin-token").write_text(api.admin_token + "\n")

    results = run(api.base, tmp_path)

    for step, got in results:
        assert bool(got) == bool(step.shown), (step.command, got)
        shown = [line for line in step.shown if not line.startswith("...")]
        for expected, actual in zip(shown, got, strict=False):
            assert same_shape(expected, actual), (step.command, expected, actual)
        for line in got:
            assert '"status":5' not in line, (step.command, line)  # never a 5xx
    # It read who moves first instead of assuming a seat, and the match is over.
    [refusal] = [got for step, got in results if step.command.startswith("curl -sS -i")]
    assert refusal[0].startswith("HTTP/1.1 422") and '"code":"not_your_turn"' in refusal[-1]
    match = json.loads((tmp_path / "match.json").read_text())
    listed = api.call("GET", "/api/matches", params={"player": match["players"][0]})
    assert isinstance(listed, list) and listed[0]["status"] == "finished"
