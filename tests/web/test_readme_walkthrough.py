"""README.md's walkthroughs run as written, the way a newcomer runs them, so they cannot drift.

The commands are read from README.md itself (tests/web/readme_walkthrough.py): the
curl walkthrough, the clocks, and the console commands after ``make run``. They run
in a new bash session without the virtualenv on its PATH, in a temporary folder
where ``./matcha run`` is running (its own PostgreSQL, Redis, API and worker in
``var/``), with no DATABASE_URL or REDIS_URL: every ``./matcha`` command must find
that folder's servers by itself. Every answer must have the shape the README shows,
and every line of prose a console command prints there must be one it prints.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from readme_walkthrough import make_run, run, said, same_shape, steps

from service.embedded import free_port

pytestmark = pytest.mark.slow


def test_the_readme_walkthroughs_run_as_written_from_a_new_shell_beside_make_run(
    tmp_path: Path,
) -> None:
    if shutil.which("jq") is None or shutil.which("curl") is None:
        pytest.skip("the walkthrough needs curl and jq (apt-get install -y curl jq)")
    assert len(steps()) > 30, "the README's walkthrough blocks were not found"

    with make_run(tmp_path, free_port()) as service:
        results = run(service.base, tmp_path)

        for ran in results:
            got = ran.out + ran.err
            assert bool(got) == bool(ran.step.shown), (ran.step.command, got)
            for line in got:
                assert "command not found" not in line, (ran.step.command, line)
                assert '"status":5' not in line, (ran.step.command, line)  # never a 5xx
            if ran.step.command.lstrip("( ").startswith(("./matcha", "R=$PWD")):
                for expected in ran.step.shown:
                    assert said(expected, got), (ran.step.command, expected, got)
                continue
            shown = [line for line in ran.step.shown if not line.startswith("...")]
            for expected, actual in zip(shown, ran.out, strict=False):
                assert same_shape(expected, actual), (ran.step.command, expected, actual)
        # It read who moves first instead of assuming a seat, and the match is over.
        [refusal] = [r.out for r in results if r.step.command.startswith("curl -sS -i")]
        assert refusal[0].startswith("HTTP/1.1 422") and '"code":"not_your_turn"' in refusal[-1]
        # The files it wrote are in its own temporary folder ($TMPDIR), none beside ./matcha.
        [match_file] = list(tmp_path.glob("tmp.*/match.json"))
        match = json.loads(match_file.read_text())
        listed = httpx.get(
            service.base + "/api/matches", params={"player": match["players"][0]}, timeout=10
        ).json()
        assert listed and all(m["status"] == "finished" for m in listed), listed
        assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob("*.jsonl"))
