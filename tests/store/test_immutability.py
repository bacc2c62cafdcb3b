"""The events table is append-only, enforced by the database, and tampering is evident."""

from __future__ import annotations

import psycopg
import pytest

from service.store.chain import check_match_chain, verify_chain
from service.store.events import EventStore

from .events_for_tests import opening, passed, played

pytestmark = pytest.mark.anyio

CHANGES = [
    "UPDATE events SET actor = 'mallory' WHERE version = 3",
    "DELETE FROM events WHERE version = 3",
    "TRUNCATE events",
]


async def _a_match(store: EventStore) -> None:
    await store.append("m-1", 0, opening("m-1"), actor="system")
    await store.append("m-1", 2, [played(0)], actor="p-ann")
    await store.append("m-1", 3, [passed(1), played(1)], actor="p-bo")


async def _rows(url: str) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT *, data::text FROM events ORDER BY position")
        return await cur.fetchall()


@pytest.mark.parametrize("sql", CHANGES)
async def test_even_a_superuser_cannot_change_or_remove_events(
    store: EventStore, admin_database_url: str, sql: str
) -> None:
    await _a_match(store)
    before = await _rows(admin_database_url)

    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        is_super = await (
            await admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        ).fetchone()
        assert is_super == (True,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            await admin.execute(sql)

    assert await _rows(admin_database_url) == before


@pytest.mark.parametrize("sql", CHANGES)
async def test_the_app_role_lacks_the_grants_to_change_events(
    store: EventStore, admin_database_url: str, database_url: str, sql: str
) -> None:
    await _a_match(store)
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        # Without the triggers, only the grants stand in the way.
        await admin.execute("ALTER TABLE events DISABLE TRIGGER USER")
        await admin.commit()

    async with await psycopg.AsyncConnection.connect(database_url) as app:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
            await app.execute(sql)
    assert len(await _rows(admin_database_url)) == 5


async def test_the_app_role_can_log_in_and_is_no_superuser(database_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(database_url) as app:
        cur = await app.execute(
            "SELECT current_user, rolsuper, rolcanlogin FROM pg_roles WHERE rolname = current_user"
        )
        assert await cur.fetchone() == ("matcha_app", False, True)


async def test_an_untouched_match_passes_the_chain_check(store: EventStore) -> None:
    await _a_match(store)

    assert await check_match_chain(store.pool, "m-1") is None


TAMPERING = [
    # (what a superuser does with triggers off, the version named, the problem)
    (
        "UPDATE events SET data = jsonb_set(data, '{card}', '\"Z1\"') WHERE version = 3",
        3,
        "hash_mismatch",
    ),
    ("UPDATE events SET actor = 'p-ann' WHERE version = 4", 4, "hash_mismatch"),
    (
        "UPDATE events SET recorded_at = recorded_at - interval '1 hour' WHERE version = 2",
        2,
        "hash_mismatch",
    ),
    ("UPDATE events SET data = data || '{\"note\": 1}' WHERE version = 3", 3, "not_canonical"),
    ("UPDATE events SET type = 'passed' WHERE version = 3", 3, "type_mismatch"),
    ("DELETE FROM events WHERE version = 3", 3, "version_gap"),
    ("DELETE FROM events WHERE version = 5", None, None),  # dropping the tail: see docs
    ("UPDATE events SET prev_hash = hash WHERE version = 4", 4, "prev_hash_mismatch"),
    ('UPDATE events SET data = \'{"type": "nonsense"}\' WHERE version = 1', 1, "undecodable_data"),
]


@pytest.mark.parametrize(("sql", "version", "problem"), TAMPERING)
async def test_a_row_changed_with_triggers_disabled_is_found_by_the_chain_check(
    store: EventStore, admin_database_url: str, sql: str, version: int | None, problem: str | None
) -> None:
    await _a_match(store)
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        await admin.execute("SET session_replication_role = replica")  # triggers off
        await admin.execute(sql)
        await admin.commit()

    found = await check_match_chain(store.pool, "m-1")

    if version is None:
        assert found is None
    else:
        assert found is not None
        assert (found.match_id, found.version, found.problem) == ("m-1", version, problem)
        assert f"version {version}" in found.detail


async def test_a_rewritten_row_with_a_recomputed_hash_breaks_the_next_link(
    store: EventStore, admin_database_url: str
) -> None:
    """A forger who knows the scheme re-hashes version 3: version 4 no longer links."""
    from schemas.events import encode_event
    from service.store.chain import row_hash

    await _a_match(store)
    row = (await store.load("m-1"))[2]
    forged = played(0, card="Z1")
    new_hash = row_hash(
        row.prev_hash,
        match_id="m-1",
        version=3,
        actor=row.actor,
        recorded_at=row.recorded_at,
        event_bytes=encode_event(forged),
    )
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        await admin.execute("ALTER TABLE events DISABLE TRIGGER USER")
        await admin.execute(
            "UPDATE events SET data = %s::jsonb, hash = %s WHERE version = 3",
            (encode_event(forged).decode(), new_hash),
        )
        await admin.commit()

    found = await check_match_chain(store.pool, "m-1")

    assert found is not None and (found.version, found.problem) == (4, "prev_hash_mismatch")


def test_verify_chain_reads_rows_in_any_order_and_names_a_duplicate() -> None:
    base = {"match_id": "m-1", "type": "passed", "actor": "x"}
    assert verify_chain([]) is None
    found = verify_chain([{**base, "version": 2}, {**base, "version": 2}])
    assert found is not None and (found.version, found.problem) == (1, "version_gap")


async def test_verify_chain_names_a_duplicated_version(
    store: EventStore, admin_database_url: str
) -> None:
    await _a_match(store)
    async with await psycopg.AsyncConnection.connect(admin_database_url) as admin:
        await admin.execute("ALTER TABLE events DROP CONSTRAINT events_match_version_key")
        await admin.execute(
            "INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash,"
            " hash) SELECT match_id, version, type, data, actor, recorded_at, prev_hash, hash"
            " FROM events WHERE version = 2"
        )
        await admin.commit()

    found = await check_match_chain(store.pool, "m-1")

    assert found is not None and (found.version, found.problem) == (2, "version_duplicated")
