"""Benchmarks: each ``bench_*.py`` module has a ``main()`` that prints a table
and writes ``bench/results/<area>.json``. Run them all with ``python -m bench``."""
