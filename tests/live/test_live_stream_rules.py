"""The stream's own rules, on the real store: gaps refill from the store,
duplicates are dropped, a reader too far behind is told where to resume."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from typing import Any

import pytest
from live_harness import Driver, Watcher

from service.broker.hints import EventsHint
from service.broker.publish import events_hint
from service.live.config import LiveSettings
from service.live.hub import Hub
from service.live.render import FrameCache
from service.live.routes import _send_frames, _Sending
from service.live.stream import Lagging, Outbound, ViewerStream
from service.matches import Seen
from service.store import EventStore

pytestmark = pytest.mark.anyio


def _hub(store: EventStore, horizon: list[int] | None = None, **settings: float) -> Hub:
    """A hub over the real store; ``horizon[0]``, if given, is the last committed version
    (the store as it was at an earlier moment, to let events "commit" during a test)."""

    async def load_page(match_id: str, after: int, limit: int) -> list[object]:
        page = await store.load(match_id, after=after, limit=limit)
        return [s for s in page if horizon is None or s.version <= horizon[0]]

    # No Redis and not started: hints reach the stream only as this test fans them.
    return Hub(
        redis_url=None, prefix="unused", load_page=load_page, settings=LiveSettings(**settings)
    )  # type: ignore[arg-type]


def _stream(hub: Hub, match_id: str, since: int = 0) -> ViewerStream:
    return ViewerStream(
        hub, match_id=match_id, seen=SPECTATOR, since=since, render=FrameCache().renderer(False)
    )


SPECTATOR = Seen(viewer="spectator", hide=False, delay_s=0.0, seat=None)


@pytest.mark.parametrize("via", ["iterator", "sender"])
async def test_a_hint_beyond_the_next_version_refills_the_gap_from_the_store(
    server: str, driver: Driver, store: EventStore, via: str
) -> None:
    match_id, a, b = await driver.new_match()
    hub = _hub(store)
    frames = _frames(_stream(hub, match_id), via)
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
    hub.fan_events(EventsHint(match_id=match_id, first_version=1, last_version=stored[-1].version))
    hub.tick()  # an idle ping is due: it must be the very next frame
    after = await anext(frames)
    assert after.version is None and json.loads(after.data)["kind"] == "ping"
    await frames.aclose()
    assert hub.watching(match_id) == 0


@pytest.mark.parametrize("via", ["iterator", "sender"])
async def test_a_reader_too_far_behind_is_told_to_resume_from_its_last_version(
    server: str, driver: Driver, store: EventStore, via: str
) -> None:
    match_id, a, b = await driver.new_match()
    rng = random.Random(4)
    for _ in range(6):
        await driver.step(match_id, (a, b), rng)
    stored = await store.load(match_id)
    hub = _hub(store, queue_size=2)
    frames = _frames(_stream(hub, match_id), via)
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
        return [
            r.frame["summary"]
            for r in lobby.frames
            if r.frame["kind"] == "lobby" and r.frame["summary"]["match_id"] == match_id
        ]

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
    assert all(
        card not in lobby.frames[i].raw
        for i in range(len(lobby.frames))
        for card in ('"M1"', '"Z1"', '"S4"')
    )
    await lobby.close()


class _SentFrames:
    """The WebSocket route's own sender loop (take, wakeup, next_frames) over a stream,
    its ASGI sends read back as frames: the hot path, not the iterator."""

    def __init__(self, stream: ViewerStream) -> None:
        self.stream = stream
        self.sent: asyncio.Queue[Outbound] = asyncio.Queue()
        self.task = asyncio.create_task(
            _send_frames(self, stream.hub, stream, _Sending())  # type: ignore[arg-type]
        )

    async def send(self, message: dict[str, Any]) -> None:
        frame = json.loads(message["text"])
        await self.sent.put(
            Outbound(
                data=message["text"],
                version=frame.get("version") if frame["kind"] == "event" else None,
            )
        )

    def __aiter__(self) -> _SentFrames:
        return self

    async def __anext__(self) -> Outbound:
        if not self.sent.empty():
            return self.sent.get_nowait()
        getter = asyncio.ensure_future(self.sent.get())
        await asyncio.wait({getter, self.task}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if not getter.done():
            getter.cancel()
            if not self.task.done():
                raise TimeoutError("the sender sent nothing for 10 s")
            self.task.result()  # the sender ended: its error
            raise StopAsyncIteration
        return getter.result()

    async def aclose(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        self.stream.close()


def _frames(stream: ViewerStream, via: str) -> Any:
    return stream.frames() if via == "iterator" else _SentFrames(stream)


@pytest.mark.parametrize("via", ["iterator", "sender"])
async def test_whatever_hints_arrive_in_whatever_order_each_version_comes_once_in_order(
    server: str, driver: Driver, store: EventStore, via: str
) -> None:
    """Hints lost, repeated, reordered, split, empty: the stream still delivers
    since+1..last exactly once, in order (the store check covers hints never sent),
    read one frame at a time or by the WebSocket sender's batches."""
    match_id, a, b = await driver.new_match()
    rng = random.Random(12)
    for _ in range(14):
        await driver.step(match_id, (a, b), rng)
    stored = await store.load(match_id)
    last = stored[-1].version
    for case in range(150):
        since = rng.randrange(0, last)
        horizon = [rng.randrange(since + 1, last + 1)]  # committed when the viewer arrives
        hub = _hub(store, horizon)
        frames = _frames(_stream(hub, match_id, since), via)
        got = [(await anext(frames)).version]  # the catch-up began: subscribed, then read
        while got[-1] != horizon[0]:
            got.append((await anext(frames)).version)
        horizon[0] = last  # the rest commits now; its hints are lost, split, repeated...
        hints = []
        for _ in range(rng.randrange(0, 8)):
            lo = rng.randrange(1, last + 1)
            hi = rng.randrange(lo, min(last, lo + 5) + 1)
            if rng.random() < 0.2:  # a hint naming versions without carrying them
                hints.append(EventsHint(match_id=match_id, first_version=lo, last_version=hi))
            else:
                hints.append(events_hint(match_id, stored[lo - 1 : hi]))
        for hint in hints:
            hub.fan_events(hint)
        await hub.check(match_id)  # the periodic comparison with the store
        while got[-1] != last:
            frame = await asyncio.wait_for(anext(frames), 5)
            if frame.version is not None:
                got.append(frame.version)
        await frames.aclose()
        assert got == list(range(since + 1, last + 1)), f"case {case}: since {since}, {hints}"
