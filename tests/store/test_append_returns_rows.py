"""``append`` hands back the rows it wrote, and runs ``also`` statements in its transaction."""

from __future__ import annotations

import pytest
from psycopg_pool import AsyncConnectionPool

from service.errors import VersionConflict
from service.store.events import EventStore

from .events_for_tests import opening, passed, played

pytestmark = pytest.mark.anyio

# Any table the app may write will do: a summary row per note, the note as its ruleset.
_NOTE = (
    "INSERT INTO match_summaries (match_id, ruleset, player0, player1, status, tokens,"
    " last_version) VALUES (%s, %s, 'a', 'b', 'live', '[]', 0)"
)


async def _notes(pool: AsyncConnectionPool) -> list[tuple[str, str]]:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT match_id, ruleset FROM match_summaries ORDER BY ruleset")
        return [(r[0], r[1]) for r in await cur.fetchall()]


async def test_the_stored_rows_returned_equal_the_rows_loaded(store: EventStore) -> None:
    first = await store.append("m-1", 0, opening("m-1"), actor="system", seed="s")
    second = await store.append("m-1", 2, [played(0), passed(1)], actor="p-ann")

    loaded = await store.load("m-1")

    assert [*first.stored, *second.stored] == loaded
    assert [s.version for s in second.stored] == [3, 4]
    assert tuple(s.position for s in second.stored) == second.positions


async def test_a_replayed_append_returns_no_rows(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    await store.append("m-1", 2, [played(0)], actor="p-ann", idempotency_key="k", request_hash="h")

    again = await store.append(
        "m-1", 2, [played(0)], actor="p-ann", idempotency_key="k", request_hash="h"
    )

    assert again.replayed and again.stored == ()


async def test_also_statements_commit_with_the_events_or_not_at_all(
    store: EventStore, pool: AsyncConnectionPool
) -> None:
    other = EventStore(pool)  # another process: its own cache of each match's head
    await other.append("m-1", 0, opening("m-1"), actor="system", also=[(_NOTE, ("n-a", "a"))])
    await store.append(
        "m-1", 2, [played(0)], actor="p", also=[(_NOTE, ("n-b", "b")), (_NOTE, ("n-c", "c"))]
    )

    # `other` still believes the match is at version 2: its statement runs and loses.
    with pytest.raises(VersionConflict):
        await other.append("m-1", 2, [passed(1)], actor="p", also=[(_NOTE, ("n-x", "lost"))])

    assert await _notes(pool) == [("n-a", "a"), ("n-b", "b"), ("n-c", "c")]
    assert [e.version for e in await store.load("m-1")] == [1, 2, 3]
