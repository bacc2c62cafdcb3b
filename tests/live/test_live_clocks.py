"""On a timed ladder every viewer's live stream carries the clocks: after each
append's event frames, a ``clocks`` frame with both seats' remaining time as
that append left them, measured at its recorded time (the same function the
views use, so a frame and a view measured at one instant agree)."""

from __future__ import annotations

import random
from datetime import datetime
from functools import partial

import pytest
from live_harness import Driver, Watcher, subscribed, until

pytestmark = pytest.mark.anyio


def _has_clocks_of(watcher: Watcher, version: int) -> bool:
    return any(
        r.frame["kind"] == "clocks" and r.frame["version"] == version for r in watcher.frames
    )


CLOCK = {"kind": "real_time", "base_s": 300, "increment_s": 2, "no_show_s": 120}


async def test_every_viewer_gets_the_clocks_after_each_append_and_an_untimed_match_none(
    server: str, driver: Driver
) -> None:
    match_id, a, b = await driver.new_match("duel", clock=CLOCK)
    base = f"ws://{server}/api/matches/{match_id}/ws"
    seat = await Watcher(base, headers=a.auth).start()
    spectator = await Watcher(base, hello={"kind": "hello"}).start()
    await subscribed(seat, spectator, version=await driver.version(match_id))
    rng = random.Random(4)
    for _ in range(6):
        assert await driver.step(match_id, (a, b), rng) > 0
    final = (await driver.http.get(f"/api/matches/{match_id}")).json()
    for watcher in (seat, spectator):
        # the clocks frame follows its append's events
        await until(partial(_has_clocks_of, watcher, final["version"]), "the last append's clocks")
    await seat.close()
    await spectator.close()

    for watcher in (seat, spectator):
        kinds = [r.frame["kind"] for r in watcher.frames]
        clocks = [r.frame for r in watcher.frames if r.frame["kind"] == "clocks"]
        assert len(clocks) >= 6, f"one clocks frame per append, got {kinds}"
        for frame in clocks:
            # Never before its event: the event of that version came earlier.
            where = watcher.frames.index(next(r for r in watcher.frames if r.frame is frame))
            assert frame["version"] in [
                r.frame.get("version") for r in watcher.frames[:where] if r.frame["kind"] == "event"
            ]
            assert frame["clocks"]["control"] == CLOCK
            for seat_clock in frame["clocks"]["seats"]:
                assert 0 <= seat_clock["remaining_ms"] <= (300 + 2 * 6) * 1000
        last = clocks[-1]
        assert last["version"] == final["version"]
        running = [c["seat"] for c in last["clocks"]["seats"] if c["running"]]
        assert running == [c["seat"] for c in final["clocks"]["seats"] if c["running"]]
        # The view measured later shows no more time than the frame measured at the append.
        measured = datetime.fromisoformat(last["clocks"]["measured_at"])
        assert measured <= datetime.fromisoformat(final["clocks"]["measured_at"])
        for in_frame, in_view in zip(
            last["clocks"]["seats"], final["clocks"]["seats"], strict=True
        ):
            assert in_view["remaining_ms"] <= in_frame["remaining_ms"]

    untimed, c, d = await driver.new_match("duel")
    plain = await Watcher(f"ws://{server}/api/matches/{untimed}/ws", headers=c.auth).start()
    await subscribed(plain, version=await driver.version(untimed))
    await driver.step(untimed, (c, d), rng)
    first = await driver.version(untimed)
    await driver.step(untimed, (c, d), rng)
    # Frames come in order: once the second append's events are here, a clocks
    # frame of the first append (which would follow its events) would be too.
    await plain.until_version(await driver.version(untimed))
    await plain.close()
    assert first < plain.last_version
    assert not [r for r in plain.frames if r.frame["kind"] == "clocks"]
