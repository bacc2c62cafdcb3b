"""Evidence beyond the database (issue 12): each change is made directly in
PostgreSQL, and the audit names that problem at that event, while the public
record route answers without a 5xx.

Two attackers: one with only the service's database role (INSERT and SELECT,
what a leaked DATABASE_URL gives), who can write rows with correct hashes but
cannot sign; and a superuser with the append-only triggers off, who can also
cut, swap and rewrite rows and recompute the chain, and is caught by the
signatures, the signed checkpoint and the receipts players hold.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import msgspec
import psycopg
import pytest
from audit_forgery import Forger, append_batches
from audit_matches import Batch, play
from litestar.testing import AsyncTestClient
from psycopg import AsyncConnection

from schemas.events import CardPlayed, Event, MatchAnnulled, encode_event
from schemas.rules import STANDARD
from service.app import create_app
from service.evidence.receipts import last_receipt
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings
from service.store.chain import GENESIS_HASH, row_hash
from service.store.events import EventStore, UnsignedHead, event_type

pytestmark = pytest.mark.anyio

LADDER = "L-evidence"


def ended(batches: list[Batch]) -> bool:
    events = [e for _, es in batches for e in es]
    return type(events[-1]).__name__ == "MatchEnded" and events[-1].winner is not None  # type: ignore[attr-defined]


def a_match(match_id: str, *, live_after: int | None = None) -> tuple[str, list[Batch]]:
    """A seeded standard ladder match: finished with a winner, or live after some moves."""
    for n in range(500):
        seed, batches = play(
            random.Random(n),
            match_id=match_id,
            ruleset=STANDARD,
            ladder_id=LADDER,
            stop_after=live_after,
        )
        if live_after is not None or ended(batches):
            return seed, batches
    raise AssertionError("no seeded match has the wanted shape")


@pytest.fixture
async def signed_match(signed_store: EventStore) -> tuple[str, str, list[Batch]]:
    seed, batches = a_match("m-signed")
    await append_batches(signed_store, "m-signed", seed, batches)
    return "m-signed", seed, batches


@pytest.fixture
async def public(
    keys: Any, database_url: str, redis_server_url: str, redis_prefix: str
) -> AsyncIterator[Any]:
    """The API on the test's database, signing with the test's key (from the environment)."""
    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=f"evidence-{redis_prefix}", admin_name="admin"),
    )
    async with AsyncTestClient(create_app(settings)) as client:
        yield client


async def record_answers_without_a_5xx(public: Any, match_id: str) -> Any:
    response = await public.get(f"/api/matches/{match_id}/record")
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/problem+json")
    return response


async def insert_as_app_role(url: str, match_id: str, event: Event, actor: str) -> int:
    """What a leaked DATABASE_URL allows: a new row at the end, its hash correctly chained."""
    async with await AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT version, hash FROM events WHERE match_id = %s ORDER BY version DESC LIMIT 1",
            (match_id,),
        )
        row = await cur.fetchone()
        version, prev = (row[0] + 1, bytes(row[1])) if row else (1, GENESIS_HASH)
        at = datetime.now(UTC)
        raw = encode_event(event)
        h = row_hash(
            prev, match_id=match_id, version=version, actor=actor, recorded_at=at, event_bytes=raw
        )
        await conn.execute(
            "INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash,"
            " hash) VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s)",
            (match_id, version, event_type(event), raw.decode(), actor, at, prev, h),
        )
    return version


# -- INSERT only, with the service's own database role ------------------------------------


async def test_an_honest_signed_match_audits_consistent_with_its_checkpoint(
    signed_match: Any, evidence_audit: Any, checkpoint: Any, public: Any
) -> None:
    match_id, _, batches = signed_match
    await checkpoint()
    report = await evidence_audit(match_id)
    assert report.verdict.consistent, report.verdict.line
    assert report.signatures.status == "consistent"
    assert report.signatures.signed_rows == len(batches)  # one signature per append
    assert report.evidence.status == "consistent"
    assert report.evidence.checkpoint_version == sum(len(es) for _, es in batches)
    record = (await record_answers_without_a_5xx(public, match_id)).json()
    assert record.get("problems", []) == []  # omitted when empty
    assert record["receipt"]["version"] == len(record["events"])
    assert record["checkpoint"]["leaf"][0] == match_id


async def test_a_forged_event_with_a_correct_hash_is_named_at_that_event(
    signed_match: Any,
    evidence_audit: Any,
    database_url: str,
    signed_store: EventStore,
    public: Any,
) -> None:
    match_id, _, _ = signed_match
    forged = CardPlayed(seat=0, hand=1, round=1, card="M1", target="number")
    v = await insert_as_app_role(database_url, match_id, forged, "alice")

    report = await evidence_audit(match_id, checkpoint=False)

    assert report.chain.status == "consistent"  # the hash is right: the chain cannot tell
    assert report.signatures.first_unsigned.version == v
    assert "appended by someone without the service's key" in (
        report.signatures.first_unsigned.problem
    )
    assert not report.verdict.consistent and f"unsigned at version {v}" in report.verdict.line
    # The service never seals the forged row into its chain by appending on top.
    with pytest.raises(UnsignedHead):
        await signed_store.append(match_id, v, [MatchAnnulled(admin="a", reason="r")], actor="a")
    response = await record_answers_without_a_5xx(public, match_id)
    assert response.status_code == 409
    assert any(f"version {v}" in e["message"] for e in response.json()["errors"])


async def test_a_forged_annulment_is_named_at_that_event(
    signed_match: Any, evidence_audit: Any, database_url: str, public: Any
) -> None:
    match_id, _, _ = signed_match
    v = await insert_as_app_role(
        database_url, match_id, MatchAnnulled(admin="nobody", reason="forged"), "nobody"
    )

    report = await evidence_audit(match_id, checkpoint=False)

    assert report.status == "annulled"
    assert report.admin.status == "consistent"  # an annulment without a dispute is allowed
    assert report.signatures.first_unsigned.version == v
    assert report.signatures.first_unsigned.event_type == "match_annulled"
    assert (await record_answers_without_a_5xx(public, match_id)).status_code == 409


def ratings(url: str, *, full: bool) -> dict[str, tuple[int, int]]:
    from workers.ratings import apply_ladder

    with psycopg.connect(url, autocommit=True) as conn:
        apply_ladder(conn, LADDER, full=full)
        rows = conn.execute(
            "SELECT player_id, games, wins FROM ratings WHERE ladder_id = %s", (LADDER,)
        ).fetchall()
    return {p: (g, w) for p, g, w in rows}


async def test_a_match_cloned_under_a_new_id_is_named_and_the_ratings_ignore_it(
    signed_match: Any, evidence_audit: Any, database_url: str, public: Any
) -> None:
    match_id, seed, _ = signed_match
    before = ratings(database_url, full=True)
    assert sum(g for g, _ in before.values()) == 2
    clone = "m-clone"
    async with await AsyncConnection.connect(database_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT version, data::text, actor, recorded_at, key_id, signature FROM events"
            " WHERE match_id = %s ORDER BY version",
            (match_id,),
        )
        prev = GENESIS_HASH
        for version, text, actor, at, key_id, signature in await cur.fetchall():
            data = msgspec.json.decode(text)
            if data["type"] == "match_created":
                data["match_id"] = clone
            raw = msgspec.json.encode(msgspec.convert(data, Event))  # type: ignore[arg-type]
            h = row_hash(
                prev, match_id=clone, version=version, actor=actor, recorded_at=at, event_bytes=raw
            )
            # the signatures are copied too: they name the original match, not the clone
            await conn.execute(
                "INSERT INTO events (match_id, version, type, data, actor, recorded_at,"
                " prev_hash, hash, key_id, signature)"
                " VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s)",
                (clone, version, data["type"], raw.decode(), actor, at, prev, h, key_id, signature),
            )
            prev = h
        await conn.execute(
            "INSERT INTO match_seeds (match_id, seed) VALUES (%s, %s)", (clone, seed)
        )

    report = await evidence_audit(clone, checkpoint=False)

    assert report.chain.status == "consistent"
    assert report.signatures.first_unsigned.version == 1
    assert "does not verify" in report.signatures.first_unsigned.problem
    assert report.fairness.first_bad_deal.version == 1  # matcha-deal-v2 binds the match id
    assert "identity" in report.fairness.first_bad_deal.problem
    assert ratings(database_url, full=False) == before  # the incremental update
    assert ratings(database_url, full=True) == before  # and a recompute from the log
    assert (await record_answers_without_a_5xx(public, clone)).status_code == 409


# -- a superuser with the triggers off ---------------------------------------------------


async def test_the_tail_cut_at_a_players_turn_is_named_by_the_checkpoint_or_a_receipt(
    signed_store: EventStore,
    evidence_audit: Any,
    checkpoint: Any,
    admin_database_url: str,
    public: Any,
) -> None:
    seed, batches = a_match("m-live", live_after=12)
    await append_batches(signed_store, "m-live", seed, batches[:-1])
    last = await signed_store.append(
        "m-live", sum(len(es) for _, es in batches[:-1]), batches[-1][1], actor=batches[-1][0]
    )
    receipt = last_receipt(last.stored)
    assert receipt is not None and receipt.version == last.last_version
    await checkpoint()
    cut = last.first_version  # the log now ends at a signed head: signatures still hold
    await Forger(admin_database_url, "m-live").execute(
        "DELETE FROM events WHERE match_id = %s AND version >= %s", ("m-live", cut)
    )

    by_checkpoint = await evidence_audit("m-live")
    by_receipt = await evidence_audit("m-live", receipts=[receipt], checkpoint=False)

    for report in (by_checkpoint, by_receipt):
        assert report.signatures.status == "consistent"
        assert report.evidence.first_problem.version == cut
        assert "removed" in report.evidence.first_problem.problem
        assert not report.verdict.consistent
    assert by_checkpoint.evidence.checkpoint_version == last.last_version
    assert by_receipt.evidence.receipts == 1
    await record_answers_without_a_5xx(public, "m-live")


async def test_a_finished_match_cut_before_its_end_is_named_by_the_checkpoint(
    signed_match: Any,
    evidence_audit: Any,
    checkpoint: Any,
    admin_database_url: str,
    public: Any,
) -> None:
    match_id, _, batches = signed_match
    await checkpoint()
    cut = sum(len(es) for _, es in batches[:-1]) + 1  # the append that ended the match
    await Forger(admin_database_url, match_id).execute(
        "DELETE FROM events WHERE match_id = %s AND version >= %s", (match_id, cut)
    )

    report = await evidence_audit(match_id)

    assert report.status == "live"
    assert report.evidence.first_problem.version == cut
    assert report.verdict.line.startswith("inconsistent")
    response = await record_answers_without_a_5xx(public, match_id)
    assert response.status_code == 404  # no longer finished: no record, and no 500


async def test_two_events_swapped_and_the_chain_recomputed_are_named_at_the_first(
    signed_match: Any, forger_of: Any, evidence_audit: Any, public: Any
) -> None:
    import itertools

    match_id, _, _ = signed_match
    forger = forger_of(match_id)
    rows = await forger.rows()
    v = next(
        r["version"]
        for r, nxt in itertools.pairwise(rows)
        if r["type"] == nxt["type"] == "card_played" and r["data"]["seat"] != nxt["data"]["seat"]
    )
    swap = "UPDATE events SET version = %s WHERE match_id = %s AND version = %s"
    await forger.execute(swap, (100_000, match_id, v))
    await forger.execute(swap, (v, match_id, v + 1))
    await forger.execute(swap, (v + 1, match_id, 100_000))
    await forger.rechain()

    report = await evidence_audit(match_id, checkpoint=False)

    assert report.chain.status == "consistent"
    assert report.signatures.first_unsigned.version == v
    assert "rewritten" in report.signatures.first_unsigned.problem
    assert report.refold.first_difference.version == v
    assert (await record_answers_without_a_5xx(public, match_id)).status_code == 409


async def test_a_played_card_swapped_for_a_held_one_with_its_reveal_edited_is_named_at_the_play(
    signed_match: Any, forger_of: Any, evidence_audit: Any, public: Any
) -> None:
    match_id, _, _ = signed_match
    forger = forger_of(match_id)
    rows = await forger.rows()

    def candidates() -> Any:
        for deal in (r for r in rows if r["type"] == "hand_dealt"):
            in_hand = [r for r in rows if r["data"].get("hand") == deal["data"]["hand"]]
            used = {r["data"]["card"] for r in in_hand if r["type"] == "card_played"}
            used |= {c for r in in_hand if r["type"] == "cards_kept" for c in r["data"]["cards"]}
            for played in (r for r in in_hand if r["type"] == "card_played"):
                seat = played["data"]["seat"]
                for held in deal["data"]["hands"][seat]:
                    if held not in used:
                        yield in_hand, played, held

    # a card played, and one its seat held all hand long and never played or kept
    in_hand, played, held = next(candidates())
    old = played["data"]["card"]
    v = played["version"]
    data = dict(played["data"], card=held)
    await forger.set_data(v, data)
    reveal = next(
        r
        for r in in_hand
        if r["type"] == "round_revealed" and r["data"]["round"] == played["data"]["round"]
    )
    edited = reveal["data"]
    for outcome in edited["outcomes"]:
        outcome["cards"] = [held if c == old else c for c in outcome["cards"]]
    await forger.set_data(reveal["version"], edited)
    await forger.rechain()

    report = await evidence_audit(match_id, checkpoint=False)

    assert report.chain.status == "consistent"
    assert report.signatures.first_unsigned.version == v
    # The log alone may well be a possible history (here a lone card, which
    # counts as matched whatever it is): only the signature tells it was rewritten.
    found = report.refold.first_difference
    assert found is None or found.version >= v
    assert not report.verdict.consistent
    assert (await record_answers_without_a_5xx(public, match_id)).status_code == 409


async def test_a_seat_swap_with_the_chain_recomputed_is_named_at_the_creation(
    signed_match: Any, forger_of: Any, evidence_audit: Any, public: Any
) -> None:
    match_id, _, _ = signed_match
    forger = forger_of(match_id)
    data = await forger.data(1)
    data["players"] = data["players"][::-1]
    await forger.set_data(1, data)
    await forger.rechain()

    report = await evidence_audit(match_id, checkpoint=False)

    assert report.chain.status == "consistent"
    assert report.signatures.first_unsigned.version == 1
    assert report.fairness.first_bad_deal.version == 1
    assert report.fairness.first_bad_deal.event_type == "match_created"
    assert (await record_answers_without_a_5xx(public, match_id)).status_code == 409


async def test_a_reused_seed_is_named_at_the_creation(
    signed_match: Any, signed_store: EventStore, evidence_audit: Any
) -> None:
    _, seed, _ = signed_match
    # a second match dealt from the first one's (now revealed) seed
    from schemas.commands import StartMatch
    from service.engine import decide, initial_state

    start = StartMatch(
        match_id="m-again",
        players=("carol", "dave"),
        ruleset=STANDARD,
        first_dealer=0,
        seed=seed,
        ladder_id=LADDER,
    )
    await signed_store.append(
        "m-again", 0, decide(initial_state(seed), start), actor="system", seed=seed
    )

    report = await evidence_audit("m-again", checkpoint=False)

    assert report.signatures.status == "consistent"  # the service itself did it
    assert report.fairness.first_bad_deal.version == 1
    assert "reused seed" in report.fairness.first_bad_deal.problem
    assert "m-signed" in report.fairness.first_bad_deal.problem
