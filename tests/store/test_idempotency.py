"""A retried command with the same idempotency key appends once, even after a restart."""

from __future__ import annotations

import anyio
import pytest

from service.errors import Conflict
from service.store.db import open_pool
from service.store.events import EventStore

from .events_for_tests import opening, passed, played

pytestmark = pytest.mark.anyio


async def test_a_retry_returns_the_first_result_and_appends_nothing(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    first = await store.append(
        "m-1", 2, [played(0)], actor="p-ann", idempotency_key="k-1", request_hash="h-1"
    )

    again = await store.append(
        "m-1", 2, [played(0)], actor="p-ann", idempotency_key="k-1", request_hash="h-1"
    )

    assert again.replayed and not first.replayed
    assert (again.first_version, again.last_version, again.positions) == (
        first.first_version,
        first.last_version,
        first.positions,
    )
    assert await store.version("m-1") == 3


async def test_a_retry_after_a_process_restart_still_appends_once(database_url: str) -> None:
    before = await open_pool(database_url, min_size=1, max_size=2)
    try:
        first_store = EventStore(before)
        await first_store.append("m-1", 0, opening("m-1"), actor="system")
        first = await first_store.append(
            "m-1", 2, [played(0), passed(1)], actor="p-ann", idempotency_key="k-1"
        )
    finally:
        await before.close()

    after = await open_pool(database_url, min_size=1, max_size=2)
    try:
        restarted = EventStore(after)
        again = await restarted.append(
            "m-1", 2, [played(0), passed(1)], actor="p-ann", idempotency_key="k-1"
        )
        assert again.replayed
        assert again.positions == first.positions
        assert await restarted.version("m-1") == 4
    finally:
        await after.close()


async def test_a_retry_that_arrives_after_other_moves_still_replays(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    first = await store.append("m-1", 2, [played(0)], actor="p-ann", idempotency_key="k-1")
    await store.append("m-1", 3, [passed(1)], actor="p-bo")

    again = await store.append("m-1", 2, [played(0)], actor="p-ann", idempotency_key="k-1")

    assert again.replayed and again.positions == first.positions
    assert await store.version("m-1") == 4


async def test_concurrent_retries_of_one_command_append_it_once(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    results = []

    async def send() -> None:
        results.append(
            await store.append("m-1", 2, [played(0)], actor="p-ann", idempotency_key="k-1")
        )

    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(send)

    assert sorted(r.replayed for r in results) == [False, True, True, True, True, True]
    assert len({r.positions for r in results}) == 1
    assert await store.version("m-1") == 3


async def test_a_key_reused_for_a_different_request_is_refused(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    await store.append(
        "m-1", 2, [played(0)], actor="p-ann", idempotency_key="k-1", request_hash="a"
    )

    with pytest.raises(Conflict) as raised:
        await store.append(
            "m-1", 3, [passed(0)], actor="p-ann", idempotency_key="k-1", request_hash="b"
        )

    assert raised.value.code == "idempotency_key_reused"
    assert await store.version("m-1") == 3


async def test_keys_belong_to_their_actor(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    await store.append("m-1", 2, [played(0)], actor="p-ann", idempotency_key="k-1")

    other = await store.append("m-1", 3, [passed(1)], actor="p-bo", idempotency_key="k-1")

    assert not other.replayed
    assert await store.version("m-1") == 4
