"""Replay archives and match records, pure: deterministic bytes, round trip,
and forged records found out even when their hash chain is recomputed."""

from __future__ import annotations

import gzip
import random
from datetime import UTC, datetime, timedelta
from itertools import accumulate

import msgspec
import pytest

from schemas.commands import StartMatch
from schemas.events import HandDealt, encode_event
from schemas.rules import DUEL, STANDARD
from service.bots import heuristic_bot, random_bot
from service.engine import evolve, initial_state
from service.engine.decide import run
from service.engine.state import Table
from service.engine.turns import must_keep
from service.replays import (
    MatchRecord,
    RecordedEvent,
    build_frames,
    build_record,
    check_record,
    decode_archive,
    decode_record,
    encode_record,
    pack,
    pack_states,
    record_of_events,
)
from service.store.chain import GENESIS_HASH, format_recorded_at, row_hash


def self_play(seed: int, match_id: str) -> tuple[list, list[str]]:
    """A whole match by two bots, with the actor of each event as the service
    records it: every event a command causes carries the commanding player."""
    rng = random.Random(seed)
    start = StartMatch(
        match_id=match_id,
        players=("p0", "p1"),
        ruleset=STANDARD if seed % 2 else DUEL,
        first_dealer=rng.choice((0, 1)),
        seed=rng.getrandbits(256).to_bytes(32, "big").hex(),
    )
    t = Table()
    log = run(t, start)
    actors = ["system"] * len(log)
    bots = (random_bot, heuristic_bot)
    while not (t.ended or t.annulled):
        seat = t.to_move
        if seat is None:
            seat = 0 if must_keep(t, 0) else 1
        caused = run(t, bots[seat](t, seat, rng))
        log.extend(caused)
        actors.extend([f"p{seat}"] * len(caused))
    return log, actors


def chained(match_id: str, log: list, actors: list[str]) -> list[tuple]:
    rows, prev = [], GENESIS_HASH
    start = datetime(2026, 3, 1, 12, tzinfo=UTC)
    for version, (event, actor) in enumerate(zip(log, actors, strict=True), start=1):
        at = start + timedelta(seconds=version)
        h = row_hash(
            prev,
            match_id=match_id,
            version=version,
            actor=actor,
            recorded_at=at,
            event_bytes=encode_event(event),
        )
        rows.append((100 + version, version, "", event, actor, at, prev, h))
        prev = h
    return rows


def a_match(seed: int, hide: bool = False):
    log, actors = self_play(seed, f"m{seed}")
    rows = chained(f"m{seed}", log, actors)
    return build_record(
        f"m{seed}",
        rows,
        names={"p0": "Ann", "p1": "Bob"},
        ladder_name="Spring",
        hide_hands_in_replay=hide,
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_archive_rebuilt_from_the_same_log_has_identical_bytes(seed: int) -> None:
    first, _ = pack(*_with_frames(*a_match(seed)))
    second, _ = pack(*_with_frames(*a_match(seed)))
    assert first == second
    assert first[4:8] == b"\0\0\0\0"  # gzip mtime 0
    archive = decode_archive(first)
    assert archive.record.headers.players[0].name == "Ann"
    assert len(archive.frames) == archive.record.headers.events
    assert archive.record.headers.final_hash == archive.record.events[-1].hash


def _with_frames(record, states):
    return record, build_frames(record, states)


def test_a_record_round_trips_and_checks_out() -> None:
    record, states = a_match(4)
    imported = decode_record(encode_record(record))
    assert imported == record
    checked = check_record(imported)
    assert checked.ok, checked.problems
    assert (checked.chain, checked.refold, checked.fairness) == ("consistent",) * 3
    assert checked.frames == build_frames(record, states)


def test_a_forged_deal_is_found_even_with_a_recomputed_chain() -> None:
    record, _ = a_match(5)
    log = [e.event for e in record.events]
    actors = [e.actor for e in record.events]
    k = next(i for i, e in enumerate(log) if isinstance(e, HandDealt))
    dealt = log[k]
    # Swap one card between the two hands, then re-hash the whole chain.
    h0, h1 = list(dealt.hands[0]), list(dealt.hands[1])
    h0[0], h1[0] = h1[0], h0[0]
    log[k] = msgspec.structs.replace(dealt, hands=(tuple(h0), tuple(h1)))
    rows = chained(record.headers.match_id, log, actors)
    forged = MatchRecord(
        headers=msgspec.structs.replace(record.headers, final_hash=rows[-1][7].hex()),
        events=[
            RecordedEvent(
                version=v,
                actor=a,
                recorded_at=format_recorded_at(at),
                prev_hash=ph.hex(),
                hash=h.hex(),
                event=e,
                position=p,
            )
            for p, v, _, e, a, at, ph, h in rows
        ],
    )
    checked = check_record(forged)
    assert checked.chain == "consistent"
    assert not checked.ok and checked.frames == []
    assert "inconsistent" in (checked.refold, checked.fairness)


def test_headers_that_lie_about_the_result_are_found() -> None:
    record, _ = a_match(6)
    lying = msgspec.structs.replace(
        record, headers=msgspec.structs.replace(record.headers, result="1/2-1/2", winner=None)
    )
    checked = check_record(lying)
    assert not checked.ok
    assert any("headers disagree" in p and "result" in p for p in checked.problems)


def test_hidden_hands_stay_hidden_in_public_frames_but_not_omniscient_ones() -> None:
    record, states = a_match(7, hide=True)
    frames = build_frames(record, states)
    dealt = next(f for f in frames if f.type == "hand_dealt")
    assert all(seat.hand is None for seat in dealt.public_view().seats)
    assert all(seat.hand for seat in dealt.omniscient.seats)
    # The seed would re-deal every hand: on such a ladder only the omniscient frames show it.
    assert frames[-1].public_view().seed is None
    assert frames[-1].omniscient.seed == record.headers.seed
    shown, _ = a_match(7, hide=False)
    open_frames = build_frames(shown, states)
    dealt = next(f for f in open_frames if f.type == "hand_dealt")
    assert dealt.public is None and all(seat.hand for seat in dealt.public_view().seats)
    assert gzip.decompress(pack(shown, open_frames)[0]).count(b'"public":null') > 0


@pytest.mark.parametrize(("seed", "hide"), [(1, False), (2, False), (3, True), (8, True)])
def test_the_one_pass_build_gives_the_bytes_of_frames_then_pack(seed: int, hide: bool) -> None:
    record, states = a_match(seed, hide)
    assert pack_states(record, states) == pack(record, build_frames(record, states))
    # the record's states are the engine's evolve, event after event, each at its instant
    assert (
        states
        == list(
            accumulate(
                record.events,
                lambda s, e: evolve(s, e.event, datetime.fromisoformat(e.recorded_at)),
                initial=initial_state(),
            )
        )[1:]
    )


async def _append_log(store, match_id: str, log: list, actors: list[str]) -> None:
    """The log as the service writes it: each run of events by one actor, one append."""
    version, i = 0, 0
    while i < len(log):
        j = i
        while j < len(log) and actors[j] == actors[i]:
            j += 1
        await store.append(match_id, version, log[i:j], actor=actors[i])
        version, i = j, j


def _stored(conn) -> dict[str, tuple]:
    return {
        row[0]: tuple(bytes(v) if isinstance(v, memoryview) else v for v in row[1:])
        for row in conn.execute(
            "SELECT match_id, format, archive, sha256, raw_size, events, final_hash,"
            " built_at_position FROM replay_archives"
        ).fetchall()
    }


@pytest.mark.anyio
async def test_a_batch_build_stores_exactly_the_archives_single_builds_store(
    store, conn, monkeypatch
) -> None:
    from workers_harness import new_ladder

    from service.replays import record_from_log
    from workers.replays import batch, build_archive, build_archives

    monkeypatch.setattr(batch, "ARCHIVE_FIRST_BATCH", 1)  # batches of 1, 3, 3

    hidden = new_ladder(conn, hide_hands_in_replay=True)
    conn.execute(
        "INSERT INTO players (id, name, token_hash) VALUES"
        " ('p0', 'Ann', '\\x00'), ('p1', 'Bob', '\\x01')"
    )
    finished = []
    for seed in range(10, 15):
        match_id = f"batch-m{seed}"
        log, actors = self_play(seed, match_id)
        if seed % 2:  # on a ladder that hides hands in replays: public frames of their own
            log[0] = msgspec.structs.replace(log[0], ladder_id=hidden)
        await _append_log(store, match_id, log, actors)
        finished.append(match_id)
    playing_log, playing_actors = self_play(20, "batch-playing")
    await _append_log(store, "batch-playing", playing_log[:5], playing_actors[:5])

    ids = [finished[0], "batch-playing", *finished[1:], "no-such-match"]
    result = build_archives(ids, batch=3)  # several batches: the load/store thread too
    assert (result["matches"], result["built"]) == (7, 5)
    batched = _stored(conn)
    assert sorted(batched) == sorted(finished)

    conn.execute("DELETE FROM replay_archives")
    for match_id in finished:
        assert build_archive(match_id)["built"]
    assert _stored(conn) == batched

    for match_id in finished:  # and what the API's own path (whole frames, then pack) builds
        record = record_from_log(conn, match_id)
        assert record is not None
        _, states = record_of_events(
            match_id,
            record.events,
            names={"p0": "Ann", "p1": "Bob"},
            ladder_name=record.headers.ladder,
            hide_hands_in_replay=record.headers.hide_hands_in_replay,
        )
        data, raw_size = pack(record, build_frames(record, states))
        assert (data, raw_size) == (batched[match_id][1], batched[match_id][3])
    hidden_frames = decode_archive(batched[finished[1]][1]).frames
    assert any(f.public is not None for f in hidden_frames[:-1])
