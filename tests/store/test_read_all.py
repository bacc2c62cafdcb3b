"""read_all: every match's committed events in global order, filtered and paged."""

from __future__ import annotations

import pytest

from service.store.events import EventStore

from .events_for_tests import opening, passed, played

pytestmark = pytest.mark.anyio


async def _two_matches(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    await store.append("m-2", 0, opening("m-2"), actor="system")
    await store.append("m-1", 2, [played(0)], actor="p-ann")
    await store.append("m-2", 2, [passed(1)], actor="p-bo")


async def test_read_all_interleaves_matches_in_append_order(store: EventStore) -> None:
    await _two_matches(store)

    got = await store.read_all()

    assert [(e.match_id, e.version) for e in got] == [
        ("m-1", 1), ("m-1", 2), ("m-2", 1), ("m-2", 2), ("m-1", 3), ("m-2", 3),
    ]  # fmt: skip
    assert [e.position for e in got] == sorted(e.position for e in got)


async def test_read_all_pages_by_position(store: EventStore) -> None:
    await _two_matches(store)
    every = await store.read_all()

    first = await store.read_all(limit=4)
    rest = await store.read_all(after_position=first[-1].position, limit=4)

    assert first + rest == every
    assert await store.read_all(after_position=every[-1].position) == []


async def test_read_all_filters_by_type(store: EventStore) -> None:
    await _two_matches(store)

    got = await store.read_all(types=["match_created", "passed"])

    assert [(e.match_id, e.type) for e in got] == [
        ("m-1", "match_created"), ("m-2", "match_created"), ("m-2", "passed"),
    ]  # fmt: skip


async def test_read_all_on_an_empty_store_is_empty(store: EventStore) -> None:
    assert await store.read_all() == []
