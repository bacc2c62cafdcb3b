"""The store signs the last row of every append (docs/event-store.md "Signatures"),
and never builds on a head it reads back that no service key signed."""

from __future__ import annotations

from typing import Any

import pytest
from psycopg import AsyncConnection

from service.evidence.keys import Keyring, SigningKey
from service.store.events import EventStore, UnsignedHead, head_is_signed
from service.store.heads import head_salt

from .events_for_tests import created, dealt, passed, played

pytestmark = pytest.mark.anyio

SEED = "5e" * 32


@pytest.fixture
def key() -> SigningKey:
    return SigningKey.generate()


@pytest.fixture
def signed(pool: Any, key: SigningKey) -> EventStore:
    return EventStore(pool, signer=key, verifier=Keyring([key.public()]))


async def test_the_last_row_of_each_append_is_signed_and_the_others_are_covered_by_the_chain(
    signed: EventStore, key: SigningKey
) -> None:
    first = await signed.append("m-s", 0, [created("m-s"), dealt()], actor="system", seed=SEED)
    second = await signed.append("m-s", 2, [played(0), passed(1)], actor="p-ann")
    rows = await signed.load("m-s")
    assert [r.signature is not None for r in rows] == [False, True, False, True]
    assert {r.key_id for r in rows if r.signature} == {key.key_id}
    keyring, salt = Keyring([key.public()]), head_salt(SEED)
    assert all(head_is_signed(keyring, r, salt) for r in rows if r.signature)
    # what the append returned is what the table holds
    assert first.stored[-1].signature == rows[1].signature
    assert second.stored[-1].blinded_hash is not None
    # another key, or another salt (the wrong seed), does not verify it
    assert not head_is_signed(Keyring([SigningKey.generate().public()]), rows[3], salt)
    assert not head_is_signed(keyring, rows[3], head_salt("00" * 32))


async def test_a_store_refuses_to_append_on_a_head_no_service_key_signed(
    signed: EventStore, store: EventStore, pool: Any, key: SigningKey
) -> None:
    await signed.append("m-u", 0, [created("m-u"), dealt()], actor="system", seed=SEED)
    # an unsigned row on top (what the database role alone can write)
    await store.append("m-u", 2, [played(0)], actor="p-ann")
    fresh = EventStore(pool, signer=key, verifier=Keyring([key.public()]))
    with pytest.raises(UnsignedHead) as refused:
        await fresh.append("m-u", 3, [passed(1)], actor="p-bo")
    assert refused.value.code == "match_log_unsigned" and "Version 3" in refused.value.detail
    assert len(await fresh.load("m-u")) == 3  # nothing appended


async def test_rows_from_before_signatures_are_built_on(
    store: EventStore, pool: Any, admin_database_url: str, key: SigningKey
) -> None:
    await store.append("m-old", 0, [created("m-old"), dealt()], actor="system", seed=SEED)
    async with await AsyncConnection.connect(admin_database_url, autocommit=True) as conn:
        # as migration 0025 records on a database that already held events
        await conn.execute("UPDATE evidence_epoch SET unsigned_up_to = 1000")
    upgraded = EventStore(pool, signer=key, verifier=Keyring([key.public()]))
    result = await upgraded.append("m-old", 2, [played(0)], actor="p-ann")
    assert result.stored[-1].signature is not None
