"""Run every ``bench/bench_*.py`` module's ``main()`` (or those named on the command line)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    here = Path(__file__).parent
    names = sorted(p.stem for p in here.glob("bench_*.py"))
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv] or names
    for name in wanted:
        print(f"== {name}")
        try:
            module = importlib.import_module(f"bench.{name}")
        except ImportError as error:
            # One part's missing dependency must not stop the other benchmarks.
            print(f"skipped: cannot import bench.{name}: {error}\n")
            continue
        module.main()
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
