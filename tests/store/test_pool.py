"""A pool outlives its connections being killed (as in a PostgreSQL restart)."""

from __future__ import annotations

import anyio
import psycopg
import pytest

from service.store.events import EventStore

from .events_for_tests import opening, played

pytestmark = pytest.mark.anyio


async def test_the_store_keeps_working_after_the_server_drops_every_connection(
    store: EventStore, admin_database_url: str
) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    async with await psycopg.AsyncConnection.connect(admin_database_url, autocommit=True) as admin:
        cur = await admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        (killed,) = await cur.fetchone()  # type: ignore[misc]
        assert killed >= 1
        # As after a restart: the old backends are gone before the next request.
        with anyio.fail_after(10):
            while True:
                cur = await admin.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                if await cur.fetchone() == (0,):
                    break
                await anyio.sleep(0.02)

    await store.append("m-1", 2, [played(0)], actor="p-ann")

    assert await store.version("m-1") == 3
