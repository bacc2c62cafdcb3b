"""No hidden card reaches anyone who may not see it, by any route, on any ladder.

Whole matches over the real server on each kind of ladder (plain, a spectator
delay, hands hidden in replays), watched by every kind of caller (each seat, a
registered outsider, an anonymous caller, the ladder's organiser, an
administrator) on every channel: command answers, the match view, its log, the
match list, WebSocket and SSE frames, refusals, the replay and its frames, the
record export and the audit, during play, at the end and after it. For each
response the oracle (``secrecy_oracle.knows``) computes, from the omniscient
log, what that caller may know at that moment; no JSON value may name a card
beyond it, nor the seed where the seed would re-deal a hidden hand.

A second test subscribes to the broker itself, and a third reads the logs.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
import redis.asyncio as aioredis
from harness import Account
from live_harness import Driver, SseWatcher, Watcher, subscribed, until
from secrecy_oracle import Knows, knows, leaked, over_at

from schemas.events import Event
from service.bots.seat_view import move_request
from service.broker import channels
from service.settings import Settings
from service.store import EventStore

pytestmark = pytest.mark.anyio

LADDERS: dict[str, dict[str, Any]] = {
    "plain": {},
    "delayed": {"spectator_delay_s": 1},
    "hidden": {"hide_hands_in_replay": True},
}

SEEDS = {"plain": 3, "delayed": 5, "hidden": 8}


@dataclass
class Table:
    """One match and the people looking at it."""

    match_id: str
    hide: bool
    who: dict[str, Account | None]
    seen: list[tuple[str, str, int, str]] = field(default_factory=list)
    """(caller, what, the match's version when it was read, the raw text)."""

    def viewer(self, caller: str, over: bool) -> int | str:
        """What the policy makes of each caller (docs/api.md "Who sees what")."""
        if caller == "seat0":
            return 0
        if caller == "seat1":
            return 1
        return "omniscient" if caller == "admin" and over else "spectator"


async def _read_all(driver: Driver, table: Table, version: int, *, over: bool) -> None:
    """Every read each caller can make about the match now."""
    mid = table.match_id
    paths = [f"/api/matches/{mid}", f"/api/matches/{mid}/events", "/api/matches?limit=20"]
    if over:
        paths += [f"/api/matches/{mid}/replay", f"/api/matches/{mid}/outcome"]
    for caller, account in table.who.items():
        headers = account.auth if account else {}
        for path in paths:
            r = await driver.http.get(path, headers=headers)
            assert r.status_code < 500, r.text
            table.seen.append((caller, path, version, r.text))
        # A refusal's words must not name a card either (a stale version: always refused).
        stale = {"card": "Z1", "target": "number", "expected_version": 1}
        r = await driver.http.post(f"/api/matches/{mid}/play", json=stale, headers=headers)
        assert r.status_code in (401, 403, 409, 422), r.text
        table.seen.append((caller, "refusal", version, r.text))
    audit = await driver.http.get(
        f"/api/admin/matches/{mid}/audit", headers=table.who["admin"].auth
    )  # type: ignore[union-attr]
    assert audit.status_code == 200, audit.text
    table.seen.append(("admin", "audit", version, audit.text))


async def _after_the_end(driver: Driver, table: Table, version: int) -> None:
    mid = table.match_id
    replay = (await driver.http.get(f"/api/matches/{mid}/replay")).json()
    for caller, account in table.who.items():
        headers = account.auth if account else {}
        for n in range(1, replay["frames"] + 1):
            r = await driver.http.get(f"/api/matches/{mid}/replay/frames/{n}", headers=headers)
            assert r.status_code == 200, r.text
            table.seen.append((caller, f"frame {n}", version, r.text))
        for path in (
            f"/api/matches/{mid}/record",
            f"/api/matches/{mid}/replay/frames/1?view=omniscient",
        ):
            r = await driver.http.get(path, headers=headers)
            assert r.status_code < 500, r.text
            table.seen.append((caller, path, version, r.text))


async def _play(driver: Driver, table: Table, rng: random.Random) -> None:
    """Play the match out with random legal moves, reading everything every few moves;
    every command's answer is kept as what its seat saw."""
    seats = (table.who["seat0"], table.who["seat1"])
    for step in range(2000):
        moved = False
        for caller, account in (("seat0", seats[0]), ("seat1", seats[1])):
            assert account is not None
            view = (
                await driver.http.get(f"/api/matches/{table.match_id}", headers=account.auth)
            ).json()
            if view["result"] is not None:
                await _read_all(driver, table, view["version"], over=True)
                return
            moves = [m for m in view["legal_moves"] if m["type"] != "resign"]
            if not moves:
                continue
            request = move_request(rng.choice(moves))
            assert request is not None
            path, body = request
            r = await driver.http.post(
                f"/api/matches/{table.match_id}/{path}",
                json={**body, "expected_version": view["version"]},
                headers=account.auth,
            )
            assert r.status_code == 200, r.text
            current = int(r.json()["version"])
            table.seen.append((caller, "answer", current, r.text))
            moved = True
            break
        assert moved, "nobody may act, yet the match is not over"
        if step % 4 == 0:
            await _read_all(driver, table, current, over=False)
    raise AssertionError("the match did not end")


def _check(table: Table, events: list[Event], seed: str) -> list[str]:
    found: list[str] = []
    for caller, what, version, text in table.seen:
        at = min(version, len(events))
        over = over_at(events, at)
        allowed: Knows = knows(events, at, table.viewer(caller, over), hide=table.hide)
        bad = leaked(text, allowed, seed)
        if bad:
            found.append(f"{caller} / {what} at v{version}: {bad}: {text[:200]}")
    return found


async def _truth(store: EventStore, match_id: str) -> tuple[list[Event], str]:
    stored = await store.load(match_id)
    seed = await store.load_seed(match_id)
    assert seed is not None
    return [s.event for s in stored], seed


async def _table(driver: Driver, setting: str) -> Table:
    organiser = await driver.organiser()
    a, b, outsider = await driver.register(), await driver.register(), await driver.register()
    ladder = await driver.ladder(organiser, "duel", members=(a, b), **LADDERS[setting])
    match_id = await driver.pair(ladder, organiser, a, b)
    return Table(
        match_id=match_id,
        hide=setting == "hidden",
        who={
            "seat0": a,
            "seat1": b,
            "outsider": outsider,
            "anonymous": None,
            "organiser": organiser,
            "admin": driver.admin,
        },
    )


@pytest.mark.parametrize("setting", sorted(LADDERS))
async def test_no_caller_sees_a_hidden_card_on_any_channel_before_at_or_after_the_end(
    server: str, driver: Driver, store: EventStore, setting: str
) -> None:
    table = await _table(driver, setting)
    base = f"ws://{server}/api/matches/{table.match_id}/ws"
    watchers: dict[str, Watcher | SseWatcher] = {}
    for caller, account in table.who.items():
        # The token both ways a client may send it: in the query (as EventSource
        # must) and as a header.
        if caller == "anonymous":
            watchers[caller] = await Watcher(base, hello={"kind": "hello"}).start()
        elif caller in ("seat0", "organiser"):
            assert account is not None
            watchers[caller] = await Watcher(f"{base}?token={account.token}").start()
        else:
            assert account is not None
            watchers[caller] = await Watcher(base, headers=account.auth).start()
    sse = await SseWatcher(f"http://{server}/api/matches/{table.match_id}/stream").start()
    # every stream has subscribed (it was sent the match so far) before the first move
    await subscribed(*watchers.values(), sse, version=await driver.version(table.match_id))

    await _play(driver, table, random.Random(SEEDS[setting]))
    events, seed = await _truth(store, table.match_id)
    await _after_the_end(driver, table, len(events))
    for watcher in (*watchers.values(), sse):
        await watcher.until_version(len(events), timeout=30)
        await watcher.close()

    for caller, watcher in (*watchers.items(), ("anonymous", sse)):
        for received in watcher.frames:
            version = received.frame.get("version") or 0
            table.seen.append((caller, f"live {received.frame['kind']}", version, received.raw))
    problems = _check(table, events, seed)
    assert not problems, "\n".join(problems[:20])
    # The checks saw the whole match on every channel, and the seed where it may be seen.
    assert len(table.seen) > 200
    public_end = [t for c, w, v, t in table.seen if c == "anonymous" and w.endswith("/record")]
    assert public_end and ((seed in public_end[0]) != table.hide)


async def test_the_broker_never_carries_a_hidden_card(
    server: str, driver: Driver, store: EventStore, live_settings: Settings
) -> None:
    """Whatever a subscriber of Redis reads equals what an anonymous spectator may see."""
    prefix = live_settings.redis.prefix
    client = aioredis.Redis.from_url(live_settings.redis.url)
    pubsub = client.pubsub()
    await pubsub.psubscribe(channels.pattern(prefix))
    messages: list[str] = []
    listening = asyncio.Event()

    async def listen() -> None:
        while True:
            message = await pubsub.get_message(timeout=1.0)
            if message is not None and message["type"] == "psubscribe":
                listening.set()
            if message is not None and message["type"] == "pmessage":
                data = message["data"]
                messages.append(data.decode() if isinstance(data, bytes) else data)

    def heard_the_end(match_id: str, version: int) -> bool:
        """Both hints of the match's last append reached the subscriber: its events'
        and (published after them) its lobby summary."""
        hints = [json.loads(m) for m in messages if match_id in m]
        return any(h.get("last_version") == version for h in hints) and any(
            h.get("kind") == "lobby" and h.get("version") == version for h in hints
        )

    listener = asyncio.create_task(listen())
    try:
        await asyncio.wait_for(listening.wait(), 10)
        tables = [await _table(driver, "plain"), await _table(driver, "hidden")]
        for i, table in enumerate(tables):
            await _play_quietly(driver, table, random.Random(i))
        for table in tables:
            final = await driver.version(table.match_id)
            await until(partial(heard_the_end, table.match_id, final), "the broker's last hints")
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await pubsub.aclose()
        await client.aclose()

    assert len(messages) > 20
    problems = []
    for table in tables:
        events, seed = await _truth(store, table.match_id)
        for text in messages:
            if table.match_id not in text and '"kind":"lobby"' not in text:
                continue
            hint = json.loads(text)
            version = hint.get("last_version") or hint.get("summary", {}).get("version") or 0
            allowed = knows(events, min(version, len(events)), "spectator", hide=table.hide)
            bad = leaked(text, allowed, seed)
            if bad:
                problems.append(f"{table.match_id} v{version}: {bad}: {text[:200]}")
    assert not problems, "\n".join(problems[:20])


async def _play_quietly(driver: Driver, table: Table, rng: random.Random) -> None:
    seats = (table.who["seat0"], table.who["seat1"])
    assert seats[0] is not None and seats[1] is not None
    await driver.play_out(table.match_id, (seats[0], seats[1]), rng)
