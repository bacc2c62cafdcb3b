"""The README's walkthroughs, read from README.md itself and run as one script, the
way a newcomer runs them: a fresh shell without the virtualenv on its PATH, in a
folder of its own where ``./matcha run`` (``make run``) is running.

Each block follows a marker ``<!-- walkthrough -->`` (the curl walkthrough, the
clocks, the console commands), and they run in the README's order in one bash
session, so a later block uses what an earlier one made. In a block a line
starting with ``$ `` begins a command, lines indented under it continue it, ``#``
lines are comments, and everything else is the output the README shows for the
command above it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MARKER = "<!-- walkthrough -->"
DEFAULT_API = "http://127.0.0.1:8000"
_READY = "Matcha is running"

# What would make a command use other servers than the folder's `make run`, or the venv.
_NOT_A_NEWCOMERS = ("DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV", "PROMETHEUS_MULTIPROC_DIR")


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)
    """The output lines the README shows for it."""


@dataclass
class Ran:
    step: Step
    out: list[str]
    err: list[str]


def steps(readme: Path = README) -> list[Step]:
    text = readme.read_text()
    found: list[Step] = []
    for marked in text.split(MARKER)[1:]:
        block = marked.split("```sh\n", 1)[1].split("\n```", 1)[0]
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


def newcomer_env(folder: Path) -> dict[str, str]:
    """A new terminal's environment: no database or broker named, no virtualenv on the
    PATH (so ``matcha`` alone is not found), temporary files in ``folder``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _NOT_A_NEWCOMERS and not k.startswith("MATCHA_")
    }
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(":") if p and ".venv" not in p]
    env.update(PATH=":".join(path), TMPDIR=str(folder), LC_ALL="C.UTF-8")
    return env


@dataclass
class MakeRun:
    proc: subprocess.Popen[bytes]
    port: int
    out: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.out.read_text(errors="replace")


@contextmanager
def make_run(folder: Path, port: int, timeout_s: float = 240) -> Iterator[MakeRun]:
    """``./matcha run --port PORT`` in ``folder`` (a link to the repository's ./matcha
    stands there, as the clone's root would hold it); stopped with Ctrl-C's SIGINT."""
    (folder / "matcha").symlink_to(ROOT / "matcha")
    out = folder / "make-run.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            ["./matcha", "run", "--port", str(port)],
            cwd=folder,
            env=newcomer_env(folder),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    running = MakeRun(proc, port, out)
    try:
        deadline = time.monotonic() + timeout_s
        while _READY not in running.output():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"./matcha run did not start:\n{running.output()[-4000:]}")
            time.sleep(0.2)
        yield running
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def run(api: str, cwd: Path, timeout_s: float = 300) -> list[Ran]:
    """Run every step in one new bash session against ``api`` (in place of the README's
    address), in ``cwd`` (where ``./matcha`` and ``var/`` are); return each step's
    output, stdout and stderr apart."""
    parts = ["set -o pipefail"]
    for n, step in enumerate(steps()):
        command = step.command.replace(DEFAULT_API, api)
        # curl's answers end without a newline; stderr is marked too (tqdm's bars, errors)
        parts.append(f"printf '\\n@@step {n}@@\\n'; printf '\\n@@step {n}@@\\n' >&2")
        parts.append(command)
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", "\n".join(parts)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=newcomer_env(cwd),
    )
    out, err = _by_step(done.stdout), _by_step(done.stderr)
    if done.returncode != 0:
        raise AssertionError(f"the walkthrough stopped ({done.returncode}): {done.stderr[-2000:]}")
    return [Ran(step, out.get(n, []), err.get(n, [])) for n, step in enumerate(steps())]


def _by_step(text: str) -> dict[int, list[str]]:
    outputs: dict[int, list[str]] = {}
    current = -1
    for line in text.splitlines():  # tqdm's "\r" splits its bar's updates too
        marker = re.fullmatch(r"@@step (\d+)@@", line)
        if marker:
            current = int(marker[1])
            outputs[current] = []
        elif current >= 0 and line.strip():
            outputs[current].append(line)
    return outputs


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

_ID = re.compile(r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b[0-9a-f]{16,}\b")
_TMP = re.compile(r"\S*/tmp\.[A-Za-z0-9]{10}\b")
"""A folder ``mktemp -d`` made: the README's is in /tmp, the test's in its own $TMPDIR."""
_PROGRESS = "%|"


def said(shown: str, lines: list[str]) -> bool:
    """A console command's line of prose the README shows is one it printed: the same
    words, where ids (UUIDs, hex) may differ and ``…`` stands for anything."""
    if _PROGRESS in shown:
        return True  # tqdm's bar: its speed and timings differ every run

    def plain(line: str) -> str:
        return _TMP.sub("TMP", _ID.sub("ID", line))

    pattern = ".*".join(re.escape(part) for part in plain(shown).split("…"))
    return any(re.fullmatch(pattern, plain(line)) for line in lines)


if __name__ == "__main__":  # run it by hand: python tests/web/readme_walkthrough.py URL DIR
    import sys

    for ran in run(sys.argv[1], Path(sys.argv[2])):
        print("$ " + ran.step.command)
        print("\n".join(ran.out + ran.err))
