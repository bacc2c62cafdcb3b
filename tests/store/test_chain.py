"""The hash chain as pure logic: valid chains pass, any single change is named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from schemas.events import encode_event
from service.store.chain import GENESIS_HASH, canonical_bytes, row_hash, verify_chain
from service.store.events import event_type

from .events_for_tests import opening, passed, played

START = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)


def _chain(length: int, actors: list[str]) -> list[dict[str, Any]]:
    events = [*opening("m-1"), *[played(0) if n % 2 else passed(1) for n in range(length)]]
    rows, prev = [], GENESIS_HASH
    for version, event in enumerate(events, start=1):
        at = START + timedelta(seconds=version)
        actor = actors[version % len(actors)]
        data = encode_event(event)
        hash_ = row_hash(
            prev, match_id="m-1", version=version, actor=actor, recorded_at=at, event_bytes=data
        )
        rows.append(
            {"match_id": "m-1", "version": version, "type": event_type(event),
             "data": data.decode(), "actor": actor, "recorded_at": at,
             "prev_hash": prev, "hash": hash_}
        )  # fmt: skip
        prev = hash_
    return rows


actors = st.lists(st.sampled_from(["system", "p-ann", "p-bo", "admin"]), min_size=1, max_size=3)


@given(length=st.integers(0, 8), who=actors)
def test_a_chain_written_by_the_rules_verifies(length: int, who: list[str]) -> None:
    assert verify_chain(_chain(length, who)) is None


@given(length=st.integers(0, 8), who=actors, data=st.data())
def test_changing_any_field_of_any_row_is_named_at_that_row(
    length: int, who: list[str], data: st.DataObject
) -> None:
    rows = _chain(length, who)
    target = data.draw(st.sampled_from(rows))
    field = data.draw(st.sampled_from(["actor", "recorded_at", "data", "hash", "prev_hash"]))
    changed = {
        "actor": target["actor"] + "x",
        "recorded_at": target["recorded_at"] + timedelta(microseconds=1),
        "data": target["data"].replace('"hand":1', '"hand":2'),
        "hash": bytes(32),
        "prev_hash": b"\x01" * 32,
    }[field]
    if changed == target[field]:
        return  # MatchCreated has no "hand": nothing was changed
    target[field] = changed

    found = verify_chain(rows)

    assert found is not None
    assert found.version == target["version"]


@given(length=st.integers(1, 8), data=st.data())
def test_removing_a_row_inside_a_match_is_a_gap_at_that_version(
    length: int, data: st.DataObject
) -> None:
    rows = _chain(length, ["p-ann"])
    gone = data.draw(st.integers(0, len(rows) - 2))
    del rows[gone]

    found = verify_chain(rows)

    assert found is not None and (found.version, found.problem) == (gone + 1, "version_gap")


@given(a=st.text(max_size=6), b=st.text(max_size=6), c=st.text(max_size=6))
def test_canonical_bytes_never_confuse_where_one_id_ends_and_the_next_begins(
    a: str, b: str, c: str
) -> None:
    one = canonical_bytes(match_id=a + b, version=1, actor=c, recorded_at=START, event_bytes=b"{}")
    two = canonical_bytes(match_id=a, version=1, actor=b + c, recorded_at=START, event_bytes=b"{}")
    assert (one == two) == (b == "")


def test_recorded_at_is_hashed_as_utc_whatever_the_zone() -> None:
    from zoneinfo import ZoneInfo

    tokyo = START.astimezone(ZoneInfo("Asia/Tokyo"))
    same = dict(match_id="m", version=1, actor="a", event_bytes=b"{}")

    assert canonical_bytes(recorded_at=tokyo, **same) == canonical_bytes(  # type: ignore[arg-type]
        recorded_at=START,
        **same,  # type: ignore[arg-type]
    )
    assert b"2026-11-29T14:00:00.000000Z" in canonical_bytes(recorded_at=START, **same)  # type: ignore[arg-type]
