"""A job for RQ to run in tests/cluster (imported by the worker by its dotted name)."""


def add(a: int, b: int) -> int:
    return a + b
