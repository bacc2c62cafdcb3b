"""The store's contract: appends, versions, conflicts, seeds."""

from __future__ import annotations

import pytest

from schemas.events import encode_event
from service.errors import ValidationFailed, VersionConflict
from service.store.events import EventStore

from .events_for_tests import opening, passed, played

pytestmark = pytest.mark.anyio


async def test_appended_events_load_back_equal_in_version_order(store: EventStore) -> None:
    first = await store.append("m-1", 0, opening("m-1"), actor="system", seed="s3cret")
    second = await store.append("m-1", 2, [played(0), passed(1)], actor="p-ann")

    loaded = await store.load("m-1")

    assert [e.version for e in loaded] == [1, 2, 3, 4]
    assert [encode_event(e.event) for e in loaded] == [
        encode_event(e) for e in [*opening("m-1"), played(0), passed(1)]
    ]
    assert [e.type for e in loaded] == ["match_created", "hand_dealt", "card_played", "passed"]
    assert [e.actor for e in loaded] == ["system", "system", "p-ann", "p-ann"]
    assert (first.first_version, first.last_version, second.last_version) == (1, 2, 4)
    assert [e.position for e in loaded] == [*first.positions, *second.positions]
    assert loaded[0].recorded_at.tzinfo is not None
    assert await store.version("m-1") == 4
    assert await store.load_seed("m-1") == "s3cret"


async def test_load_after_and_limit_page_through_a_match(store: EventStore) -> None:
    await store.append("m-1", 0, [*opening("m-1"), played(0), passed(1)], actor="system")

    page = await store.load("m-1", after=1, limit=2)

    assert [e.version for e in page] == [2, 3]


async def test_an_unknown_match_has_no_events_version_zero_and_no_seed(store: EventStore) -> None:
    assert await store.load("nobody") == []
    assert await store.version("nobody") == 0
    assert await store.load_seed("nobody") is None


async def test_each_row_links_to_the_hash_of_the_previous_version(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    await store.append("m-1", 2, [played(0)], actor="p-ann")

    loaded = await store.load("m-1")

    assert loaded[0].prev_hash == bytes(32)
    assert [e.prev_hash for e in loaded[1:]] == [e.hash for e in loaded[:-1]]
    assert len({e.hash for e in loaded}) == 3


@pytest.mark.parametrize("expected", [0, 1, 3, 7])
async def test_a_stale_or_future_expected_version_conflicts_and_writes_nothing(
    store: EventStore, expected: int
) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    before = await store.load("m-1")

    with pytest.raises(VersionConflict) as raised:
        await store.append("m-1", expected, [played(0), passed(1)], actor="p-ann")

    assert raised.value.code == "version_conflict"
    assert f"match m-1 is at version 2, you expected {expected}" in raised.value.detail
    assert await store.load("m-1") == before
    assert await store.read_all() == before


async def test_a_conflict_seen_by_a_store_with_a_stale_cache_writes_nothing(
    store: EventStore,
) -> None:
    other = EventStore(store.pool)
    await store.append("m-1", 0, opening("m-1"), actor="system")
    await store.load("m-1")  # this store now believes the match is at version 2
    await other.append("m-1", 2, [played(0)], actor="p-ann")

    with pytest.raises(VersionConflict, match="at version 3, you expected 2"):
        await store.append("m-1", 2, [passed(1)], actor="p-bo")

    assert [e.type for e in await store.load("m-1")] == [
        "match_created",
        "hand_dealt",
        "card_played",
    ]


async def test_creating_a_match_that_exists_conflicts_and_keeps_the_first_seed(
    store: EventStore,
) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system", seed="first")

    with pytest.raises(VersionConflict):
        await store.append("m-1", 0, opening("m-1"), actor="system", seed="second")

    assert await store.load_seed("m-1") == "first"
    assert await store.version("m-1") == 2


async def test_a_seed_is_refused_after_the_first_append(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")

    with pytest.raises(ValidationFailed):
        await store.append("m-1", 2, [played(0)], actor="system", seed="late")


async def test_an_empty_append_is_refused(store: EventStore) -> None:
    with pytest.raises(ValidationFailed):
        await store.append("m-1", 0, [], actor="system")
