"""A ladder's spectator delay: spectators see each event that late, players at once."""

from __future__ import annotations

import random

import pytest
from live_harness import Driver, Watcher

from service.store import EventStore

pytestmark = pytest.mark.anyio

DELAY_S = 3


async def test_spectators_see_each_event_no_earlier_than_the_delay_players_at_once(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match(spectator_delay_s=DELAY_S)
    base = f"ws://{server}/api/matches/{match_id}/ws"
    player = await Watcher(base, headers=a.auth).start()
    spectator = await Watcher(base, hello={"kind": "hello"}).start()
    rng = random.Random(1)
    version = 0
    for _ in range(4):
        version = await driver.step(match_id, (a, b), rng)
    await player.until_version(version, timeout=5)
    await spectator.until_version(version, timeout=DELAY_S + 5)
    recorded = {s.version: s.recorded_at.timestamp() for s in await store.load(match_id)}

    for frame in spectator.events:
        waited = frame.at - recorded[frame.frame["version"]]
        assert waited >= DELAY_S - 0.01, f"v{frame.frame['version']} after {waited:.3f}s"
    moves = [f for f in player.events if f.frame["version"] > 2]  # not the catch-up
    assert moves
    for frame in moves:
        assert frame.at - recorded[frame.frame["version"]] < DELAY_S / 2  # not held back
    await player.close()
    await spectator.close()
