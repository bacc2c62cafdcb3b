"""Spectators' frames carry each seat's chance to win, and only theirs.

A live spectator's stream gets an ``odds`` frame after the events it was
computed from (never before: a delayed spectator must not learn a move's effect
early); a player's stream never gets one (players are not told the odds).
"""

from __future__ import annotations

import asyncio

import pytest
from live_harness import Driver

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _cheap_odds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATCHA_WINPROB_PLAYOUTS", "30")
    monkeypatch.setenv("MATCHA_WINPROB_MAX_MS", "0")


async def test_spectators_get_the_odds_after_the_events_they_judge_and_players_never(
    server: str, driver: Driver
) -> None:
    _, seat, spectator, final = await driver.watched_duel(server, 2, pause_s=0.05)
    await spectator.until_version(final)
    deadline = asyncio.get_running_loop().time() + 20
    while not any(r.frame["kind"] == "odds" for r in spectator.frames):
        assert asyncio.get_running_loop().time() < deadline, "no odds frame reached the spectator"
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    await seat.close()
    await spectator.close()

    assert not [r for r in seat.frames if r.frame["kind"] == "odds"], "a player was told the odds"
    sent = 0
    odds = 0
    for received in spectator.frames:
        frame = received.frame
        if frame["kind"] == "event":
            sent = frame["version"]
        elif frame["kind"] == "odds":
            odds += 1
            assert frame["version"] <= sent, "odds arrived before the event they judge"
            p0, p1 = frame["p"]
            assert 0.0 <= p0 <= 1.0 and 0.0 <= p1 <= 1.0 and p0 + p1 <= 1.0 + 1e-9
    assert odds >= 1
