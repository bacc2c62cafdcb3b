"""Reconnecting with ``since`` (or SSE ``Last-Event-ID``) resumes exactly."""

from __future__ import annotations

import random

import pytest
from live_harness import Driver, SseWatcher, Watcher, end_version, expected_entry, expected_live_log

from service.store import EventStore

pytestmark = pytest.mark.anyio


async def test_reconnecting_with_since_resumes_with_no_gap_and_no_duplicate(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match()
    rng = random.Random(3)
    base = f"ws://{server}/api/matches/{match_id}/ws"
    got: list[tuple[dict[str, object], bool]] = []  # (frame, connected after the end?)
    since = 0
    over = False
    while not over:  # watch a few moves, drop, miss a few moves, come back
        ended_before = end_version(await store.load(match_id)) is not None
        watcher = await Watcher(f"{base}?since={since}", headers=a.auth).start()
        for _ in range(3):
            if await driver.step(match_id, (a, b), rng) == 0:
                over = True
                break
        await watcher.until_version((await store.load(match_id))[-1].version)
        await watcher.close()
        got.extend((r.frame, ended_before) for r in watcher.events)
        since = watcher.last_version
        for _ in range(4):
            if not over and await driver.step(match_id, (a, b), rng) == 0:
                over = True
    stored = await store.load(match_id)
    if since < stored[-1].version:  # the end came while we were away: come back once more
        watcher = await Watcher(f"{base}?since={since}", headers=a.auth).start()
        await watcher.until_version(stored[-1].version)
        await watcher.close()
        got.extend((r.frame, True) for r in watcher.events)
    end = end_version(stored)
    assert end is not None

    assert [f["version"] for f, _ in got] == list(range(1, stored[-1].version + 1))
    # Redacted while the match was live; whole once it ended (or if we came back after).
    assert [f["entry"] for f, _ in got] == [
        expected_entry(s, 0, replay or s.version >= end)
        for s, (_, replay) in zip(stored, got, strict=True)
    ]


async def test_sse_resumes_from_last_event_id(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match()
    rng = random.Random(5)
    url = f"http://{server}/api/matches/{match_id}/stream"
    first = await SseWatcher(url).start()
    for _ in range(5):
        await driver.step(match_id, (a, b), rng)
    await first.until_version((await store.load(match_id))[-1].version)
    await first.close()
    for _ in range(5):
        await driver.step(match_id, (a, b), rng)
    second = await SseWatcher(url, headers={"Last-Event-ID": str(first.last_version)}).start()
    await driver.play_out(match_id, (a, b), rng)
    stored = await store.load(match_id)
    await second.until_version(stored[-1].version)
    await second.close()
    assert first.ids + second.ids == list(range(1, stored[-1].version + 1))
    entries = [r.frame["entry"] for r in first.events + second.events]
    assert entries == expected_live_log(stored, "spectator")
