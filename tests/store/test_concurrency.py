"""Racing writers on one match. (The global order projections follow, the late
commit and the polling reader, is tested on every stream by
test_stream_contract.py.)"""

from __future__ import annotations

import anyio
import pytest

from service.errors import VersionConflict
from service.store.events import EventStore

from .events_for_tests import opening, passed, played

pytestmark = pytest.mark.anyio


async def test_racing_writers_on_one_match_leave_gapless_unique_versions(
    store: EventStore,
) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    wins: list[tuple[str, int]] = []
    conflicts = 0

    async def writer(name: str) -> None:
        nonlocal conflicts
        for _ in range(12):
            expected = await store.version("m-1")
            try:
                result = await store.append("m-1", expected, [played(0), passed(1)], actor=name)
            except VersionConflict:
                conflicts += 1
            else:
                wins.append((name, result.first_version))

    async with anyio.create_task_group() as tg:
        for n in range(8):
            tg.start_soon(writer, f"p-{n}")

    loaded = await store.load("m-1")
    versions = [e.version for e in loaded]
    assert versions == list(range(1, len(loaded) + 1))
    # Each win wrote exactly its two versions; each version has exactly one winner.
    won_versions = sorted(v for _, first in wins for v in (first, first + 1))
    assert won_versions == list(range(3, len(loaded) + 1))
    by_version = {e.version: e.actor for e in loaded}
    assert all(by_version[first] == by_version[first + 1] == name for name, first in wins)
    assert conflicts > 0, "the writers never raced: the test proves nothing"
