"""Fixtures for the match core's own tests: a ``MatchCore`` over a real
``EventStore`` on this test's database (``store`` from tests/conftest.py), with
a clock the test moves (``core.now``), and no adapter around it."""

from __future__ import annotations

import pytest
from core_script import Clock, Table

from service.matches import MatchCore
from service.store import EventStore


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def core(store: EventStore, clock: Clock) -> MatchCore:
    matches = MatchCore(store)
    matches.now = clock
    return matches


@pytest.fixture
def table(core: MatchCore) -> Table:
    return Table(core)
