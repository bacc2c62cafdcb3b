"""Spectators' frames carry each seat's chance to win, and only theirs.

A live spectator's stream gets an ``odds`` frame after the events it was
computed from (never before: a delayed spectator must not learn a move's effect
early); a player's stream never gets one (players are not told the odds).
"""

from __future__ import annotations

from functools import partial

import pytest
from live_harness import Driver, Watcher, until

pytestmark = pytest.mark.anyio


def _odds_of(watcher: Watcher, version: int) -> bool:
    return any(r.frame["kind"] == "odds" and r.frame["version"] == version for r in watcher.frames)


def _sees_spectators(watcher: Watcher, count: int) -> bool:
    return any(
        r.frame["kind"] == "presence" and r.frame["spectators"] >= count for r in watcher.frames
    )


@pytest.fixture(autouse=True)
def _cheap_odds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATCHA_WINPROB_PLAYOUTS", "30")
    monkeypatch.setenv("MATCHA_WINPROB_MAX_MS", "0")


async def test_spectators_get_the_odds_after_the_events_they_judge_and_players_never(
    server: str, driver: Driver
) -> None:
    match_id, seat, spectator, final = await driver.watched_duel(server, 2, pause_s=0.05)
    await spectator.until_version(final)
    # The last estimate is of the final version (commits during an estimate are
    # folded into one more, at the latest version).
    await until(partial(_odds_of, spectator, final), "the odds of the final version")
    # Frames come in order, and every process hands a hint to all its viewers of
    # the match at once: a presence change made after that estimate (one more
    # spectator) reaching the seat proves the seat's stream took the estimate too.
    late = Watcher(f"ws://{server}/api/matches/{match_id}/ws", hello={"kind": "hello"})
    await late.start()
    await until(partial(_sees_spectators, seat, 2), "the seat told of the second spectator")
    for watcher in (seat, spectator, late):
        await watcher.close()

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
