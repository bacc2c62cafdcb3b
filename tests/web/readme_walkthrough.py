"""The README's curl walkthrough, read from README.md itself and run as a script.

The block follows the marker ``<!-- walkthrough -->``. In it a line starting
with ``$ `` begins a command, lines indented under it continue it, ``#`` lines
are comments, and everything else is the output the README shows for the
command above it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "<!-- walkthrough -->"
DEFAULT_API = "http://127.0.0.1:8000"


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)
    """The output lines the README shows for it."""


def steps(readme: Path = README) -> list[Step]:
    text = readme.read_text()
    start = text.index(MARKER)
    block = text[start:].split("```sh\n", 1)[1].split("\n```", 1)[0]
    found: list[Step] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            found.append(Step(line[2:]))
        elif line.startswith((" ", "\t")) and found and not found[-1].shown:
            found[-1].command += "\n" + line
        elif line.startswith("#") or not line.strip():
            continue
        elif found:
            found[-1].shown.append(line)
    return found


def run(api: str, cwd: Path, timeout_s: float = 240) -> list[tuple[Step, list[str]]]:
    """Run every step in one bash session against ``api`` (in place of the README's
    address), in ``cwd`` (where ``var/admin-token`` is); return each step's output."""
    parts = ["set -o pipefail"]
    for n, step in enumerate(steps()):
        command = step.command.replace(DEFAULT_API, api)
        parts.append(f"printf '\\n@@step {n}@@\\n'")  # curl's answers end without one
        parts.append(command)
    done = subprocess.run(
        ["bash", "-c", "\n".join(parts)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    outputs: dict[int, list[str]] = {}
    current = -1
    for line in done.stdout.splitlines():
        marker = re.fullmatch(r"@@step (\d+)@@", line)
        if marker:
            current = int(marker[1])
            outputs[current] = []
        elif current >= 0 and line.strip():
            outputs[current].append(line)
    if done.returncode != 0:
        raise AssertionError(f"the walkthrough stopped ({done.returncode}): {done.stderr[-2000:]}")
    return [(step, outputs.get(n, [])) for n, step in enumerate(steps())]


def same_shape(shown: str, got: str) -> bool:
    """A README output line and a real one agree: same JSON keys (recursively for
    objects), or the same HTTP status line; ids, tokens and cards may differ."""
    if shown.startswith("HTTP/"):
        return got.split(" ", 2)[:2] == shown.split(" ", 2)[:2]
    try:
        a, b = json.loads(shown), json.loads(got)
    except ValueError:
        return True  # prose, headers or an ellipsis: not compared
    return _keys(a) == _keys(b)


def _keys(value: object) -> object:
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items() if k not in _FREE}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return _keys(value[0])
    return None


_FREE = {"round1", "tokens", "sent", "comparison", "winning_sets", "result"}
"""Fields whose inner shape depends on the match dealt (which target, which tokens)."""


if __name__ == "__main__":  # run it by hand: python tests/web/readme_walkthrough.py URL DIR
    import sys

    for step, out in run(sys.argv[1], Path(sys.argv[2])):
        print("$ " + step.command)
        print("\n".join(out))
