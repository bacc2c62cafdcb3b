"""The stream's own rules, on the real store: gaps refill from the store,
duplicates are dropped, a reader too far behind is told where to resume."""

from __future__ import annotations

import json
import random

import pytest
from live_harness import Driver, Watcher

from service.live.config import LiveSettings
from service.live.hub import Hub
from service.live.publish import events_hint
from service.live.render import FrameCache
from service.live.stream import Lagging, ViewerStream
from service.live.wire import EventsHint
from service.store import EventStore

pytestmark = pytest.mark.anyio


def _hub(store: EventStore, **settings: float) -> Hub:
    async def load_page(match_id: str, after: int, limit: int) -> list[object]:
        return list(await store.load(match_id, after=after, limit=limit))

    # No Redis and not started: hints reach the stream only as this test fans them.
    return Hub(redis_url=None, prefix="unused", load_page=load_page,
               settings=LiveSettings(**settings))  # type: ignore[arg-type]


def _stream(hub: Hub, match_id: str, since: int = 0) -> ViewerStream:
    return ViewerStream(hub, match_id=match_id, viewer="spectator", since=since,
                        render=FrameCache().renderer(False))


async def test_a_hint_beyond_the_next_version_refills_the_gap_from_the_store(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match()
    hub = _hub(store)
    frames = _stream(hub, match_id).frames()
    assert [(await anext(frames)).version for _ in range(2)] == [1, 2]

    rng = random.Random(8)
    for _ in range(4):
        await driver.step(match_id, (a, b), rng)
    stored = await store.load(match_id)
    hub.fan_events(events_hint(match_id, stored[-1:]))  # only the newest: 3.. were "lost"
    got = [(await anext(frames)).version for _ in range(len(stored) - 2)]
    assert got == list(range(3, len(stored) + 1))

    hub.fan_events(events_hint(match_id, stored[2:4]))  # a late duplicate
    # A hint that names versions but carries no events: the store has them.
    hub.fan_events(EventsHint(match_id=match_id, first_version=1,
                              last_version=stored[-1].version))
    hub.tick()  # an idle ping is due: it must be the very next frame
    after = await anext(frames)
    assert after.version is None and json.loads(after.data)["kind"] == "ping"
    await frames.aclose()
    assert hub.watching(match_id) == 0


async def test_a_reader_too_far_behind_is_told_to_resume_from_its_last_version(
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match()
    rng = random.Random(4)
    for _ in range(6):
        await driver.step(match_id, (a, b), rng)
    stored = await store.load(match_id)
    hub = _hub(store, queue_size=2)
    frames = _stream(hub, match_id).frames()
    sent = [(await anext(frames)).version]
    for s in stored:  # the reader stalls while more hints than its queue holds arrive
        hub.fan_events(events_hint(match_id, [s]))
    with pytest.raises(Lagging) as lag:
        async for frame in frames:
            sent.append(frame.version)
    assert sent == list(range(1, len(stored) + 1))
    assert lag.value.last_version == sent[-1]


async def test_the_lobby_hears_matches_start_and_finish(
    server: str, driver: Driver, store: EventStore
) -> None:
    lobby = await Watcher(f"ws://{server}/api/lobby/ws").start()
    match_id, a, b = await driver.new_match()
    await driver.play_out(match_id, (a, b), random.Random(2))
    stored = await store.load(match_id)

    def summaries() -> list[dict[str, object]]:
        return [r.frame["summary"] for r in lobby.frames
                if r.frame["kind"] == "lobby" and r.frame["summary"]["match_id"] == match_id]

    import asyncio

    for _ in range(100):
        if any(s["status"] == "finished" for s in summaries()):
            break
        await asyncio.sleep(0.05)
    seen = summaries()
    assert seen[0]["status"] == "started"
    assert seen[0]["players"] == [a.id, b.id]
    final = seen[-1]
    assert final["status"] == "finished"
    assert final["version"] == stored[-1].version
    ended = stored[-1].event
    assert final["winner"] == getattr(ended, "winner", None)
    assert all(card not in lobby.frames[i].raw for i in range(len(lobby.frames))
               for card in ('"M1"', '"Z1"', '"S4"'))
    await lobby.close()
