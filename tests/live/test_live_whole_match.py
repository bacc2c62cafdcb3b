"""Both players and several spectators watch a whole match, live."""

from __future__ import annotations

import asyncio
import random

import pytest
from live_harness import Driver, SseWatcher, Watcher, expected_entry, expected_live_log, leaks

from service.store import EventStore

pytestmark = pytest.mark.anyio


async def test_each_viewer_receives_exactly_its_redacted_log_and_never_a_hidden_card(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match()
    base = f"ws://{server}/api/matches/{match_id}/ws"
    # Three ways to say who you are: query token, Authorization header, none.
    seat0 = await Watcher(f"{base}?token={a.token}").start()
    seat1 = await Watcher(base, headers=b.auth).start()
    spectators = [await Watcher(base, hello={"kind": "hello"}).start() for _ in range(3)]
    quiet_spectator = await Watcher(base).start()  # sends nothing: a spectator after the wait
    sse = await SseWatcher(f"http://{server}/api/matches/{match_id}/stream").start()
    watchers = [seat0, seat1, *spectators, quiet_spectator]
    # Every stream must have begun before the end: a stream that begins after it is
    # a replay, where the whole log is public (the quiet one begins after the hello wait).
    for w in [*watchers, sse]:
        await w.until_version(1)

    await driver.play_out(match_id, (a, b), random.Random(7))

    stored = await store.load(match_id)
    seed = await store.load_seed(match_id)
    last = stored[-1].version
    for w in [*watchers, sse]:
        await w.until_version(last)

    for viewer, watcher in [
        (0, seat0),
        (1, seat1),
        *[("spectator", w) for w in spectators],
        ("spectator", quiet_spectator),
        ("spectator", sse),
    ]:
        assert watcher.versions == list(range(1, last + 1)), "a gap or a duplicate"
        assert [r.frame["entry"] for r in watcher.events] == expected_live_log(stored, viewer)
        assert leaks(watcher.frames, stored, seed, viewer) == []
    # The oracle can tell: a player's own frames, seen by the opponent, would leak.
    assert leaks(seat0.frames, stored, seed, 1) != []
    assert leaks(seat1.frames, stored, seed, "spectator") != []

    # Presence: each player saw the other connected; spectators saw the crowd.
    assert any(
        r.frame["kind"] == "presence" and r.frame["players"] == [True, True] for r in seat0.frames
    )
    assert (
        max(r.frame["spectators"] for r in spectators[0].frames if r.frame["kind"] == "presence")
        >= 4
    )

    for w in watchers:
        await w.close()
    await sse.close()


async def test_a_viewer_connecting_after_the_end_gets_the_replay_the_http_log_gives(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match()
    await driver.play_out(match_id, (a, b), random.Random(11))
    stored = await store.load(match_id)
    for account in (a, None):
        headers = account.auth if account else {}
        replay = await Watcher(
            f"ws://{server}/api/matches/{match_id}/ws?since=0",
            headers=headers,
            hello=None if account else {"kind": "hello"},
        ).start()
        await replay.until_version(stored[-1].version)
        r = await driver.http.get(f"/api/matches/{match_id}/events?limit=1000", headers=headers)
        assert r.status_code == 200
        assert [f.frame["entry"] for f in replay.events] == r.json()
        viewer = 0 if account else "spectator"
        assert r.json() == [expected_entry(s, viewer, True) for s in stored]
        await replay.close()


async def test_a_player_sees_the_opponent_leave(server: str, driver: Driver) -> None:
    match_id, a, b = await driver.new_match()
    base = f"ws://{server}/api/matches/{match_id}/ws"
    seat0 = await Watcher(base, headers=a.auth).start()
    seat1 = await Watcher(base, headers=b.auth).start()

    async def presence(w: Watcher, players: list[bool]) -> None:
        while not (
            w.frames
            and [r.frame for r in w.frames if r.frame["kind"] == "presence"]
            and [r.frame for r in w.frames if r.frame["kind"] == "presence"][-1]["players"]
            == players
        ):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(presence(seat0, [True, True]), 5)
    await seat1.close()
    await asyncio.wait_for(presence(seat0, [True, False]), 5)
    await seat0.close()


async def test_a_ladder_that_hides_hands_in_replays_hides_them_live_after_the_end_too(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match(hide_hands_in_replay=True)
    await driver.play_out(match_id, (a, b), random.Random(13))
    stored = await store.load(match_id)
    replay = await Watcher(
        f"ws://{server}/api/matches/{match_id}/ws", hello={"kind": "hello"}
    ).start()
    await replay.until_version(stored[-1].version)
    assert [f.frame["entry"] for f in replay.events] == [
        expected_entry(s, "spectator", True, hide=True) for s in stored
    ]
    dealt = [
        f.frame["entry"]["event"]
        for f in replay.events
        if f.frame["entry"]["event"]["type"] == "hand_dealt"
    ]
    assert dealt and all(e["hands"] == [None, None] for e in dealt)
    r = await driver.http.get(f"/api/matches/{match_id}/events?limit=1000")
    assert [f.frame["entry"] for f in replay.events] == r.json()
    await replay.close()
