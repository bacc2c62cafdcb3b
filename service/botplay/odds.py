"""The spectators' win probability, after each commit, off the request path.

Estimates are made for the matches somebody watches: asking the route for a
match's odds (or ``OddsService.watch``, for a live stream with spectators)
marks it watched for ``odds_watch_s`` seconds, in every API process (a sorted
set in Redis, read every two seconds). The after-commit hook of a watched
match notes that it moved; a background task per match (at most
``MAX_MATCHES`` per process) then builds the *live spectator's view*
(``MatchPort.spectator_view``) and estimates each seat's chance from it alone
(``service.bots.winprob.estimate``, in a worker thread, one estimate at a
time per process: one core at most), with ``odds_playouts`` playouts and a
CPU ceiling of ``odds_max_ms`` per update. Commits that arrive while an
estimate runs are folded into one more estimate at the latest version, so a
burst of events costs two estimates, not one per event.

Estimates are kept per version in a Redis hash per match (every API process
serves them; ``odds_ttl_s`` after the last write they expire), or in this
process while Redis is away. They are a projection of the log: the estimate
at a version is a function of the spectator's view at that version (the draws
are seeded by it), so a lost one is simply computed again
(tests/botplay/test_odds.py rebuilds them from the log and compares).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from service.botplay.config import BotPlaySettings
from service.botplay.match_port import CommitNote, MatchPort
from service.bots.search import Budget
from service.bots.winprob import estimate, view_seed
from service.broker import channels
from service.broker.hints import OddsHint, hint_encoder
from service.errors import NotFound

log = logging.getLogger("matcha.botplay.odds")

MAX_MATCHES: Final = 1_000
WATCHED_REFRESH_S: Final = 2.0
"""How often a process reads which matches anybody (through any process) is watching."""
WATCH_NOTE_EVERY_S: Final = 30.0
"""A process notes a watcher's interest in Redis at most this often per match."""
LOCAL_MATCHES: Final = 2_000
"""Matches kept in this process while Redis is away (the oldest go first)."""


class StoredOdds(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    p: tuple[float, float]
    playouts: int
    computed_at: datetime


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(StoredOdds).decode


class OddsStore:
    """Estimates by match and version: in Redis, else in this process."""

    def __init__(self, redis: Any, prefix: str, ttl_s: int) -> None:
        self._redis = redis
        self._prefix = prefix
        self._ttl_s = ttl_s
        self._local: OrderedDict[str, dict[int, StoredOdds]] = OrderedDict()

    def key(self, match_id: str) -> str:
        return f"{self._prefix}:winprob:{match_id}"

    @property
    def watched_key(self) -> str:
        """A sorted set: match id, scored by when the interest in it lapses (epoch s)."""
        return f"{self._prefix}:winprob-watched"

    async def watch(self, match_id: str, until: float) -> None:
        if self._redis is None:
            return
        try:
            await self._redis.zadd(self.watched_key, {match_id: until})
        except Exception as error:
            log.warning("could not note the interest in match %s in Redis: %s", match_id, error)

    async def watched(self, now: float) -> dict[str, float]:
        """Every match somebody asked the odds of recently, with when that lapses."""
        if self._redis is None:
            return {}
        await self._redis.zremrangebyscore(self.watched_key, "-inf", now)
        rows = await self._redis.zrangebyscore(self.watched_key, now, "+inf", withscores=True)
        return {(m.decode() if isinstance(m, bytes) else m): float(s) for m, s in rows}

    async def put(self, match_id: str, odds: StoredOdds) -> None:
        mine = self._local.setdefault(match_id, {})
        mine[odds.version] = odds
        self._local.move_to_end(match_id)
        while len(self._local) > LOCAL_MATCHES:
            self._local.popitem(last=False)
        if self._redis is None:
            return
        try:
            key = self.key(match_id)
            hint = OddsHint(match_id=match_id, version=odds.version, p=odds.p)
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.hset(key, str(odds.version), _encode(odds))
                pipe.expire(key, self._ttl_s)
                # The live spectators of every API process hear of it (service/live).
                pipe.publish(
                    channels.match_channel(self._prefix, match_id), hint_encoder.encode(hint)
                )
                await pipe.execute()
        except Exception as error:  # Redis is a cache of a projection: keep serving
            log.warning("could not keep the odds of match %s in Redis: %s", match_id, error)

    async def latest(self, match_id: str, at_most: int) -> StoredOdds | None:
        """The estimate of the latest version up to ``at_most``, if there is one."""
        found: dict[int, StoredOdds] = dict(self._local.get(match_id, {}))
        if self._redis is not None:
            try:
                raw = await self._redis.hgetall(self.key(match_id))
                for field, value in raw.items():
                    found.setdefault(int(field), _decode(value))
            except Exception as error:
                log.warning("could not read the odds of match %s from Redis: %s", match_id, error)
        versions = [v for v in found if v <= at_most]
        return found[max(versions)] if versions else None


class OddsService:
    def __init__(self, port: MatchPort, store: OddsStore, settings: BotPlaySettings) -> None:
        self._port = port
        self.store = store
        self._budget = Budget(
            playouts=max(1, settings.odds_playouts),
            max_ms=float(settings.odds_max_ms) if settings.odds_max_ms > 0 else None,
        )
        self._watch_s = settings.odds_watch_s
        self._watched: dict[str, float] = {}
        """Match id -> when the interest in it lapses (epoch s), this process's copy."""
        self._wanted: dict[str, set[int | None]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._estimating = asyncio.Semaphore(1)
        self._refresher: asyncio.Task[None] | None = None
        self.estimates = 0
        """Estimates this process has computed."""

    async def after_commit(self, note: CommitNote) -> None:
        """The after-commit hook: a watched match gets a new estimate soon (no I/O here)."""
        if self._watched.get(note.match_id, 0.0) > time.time():
            self.poke(note.match_id)

    async def spectating(self, match_id: str) -> None:
        """A live spectator opened the match: estimate it now and after each event."""
        await self.watch(match_id)
        self.poke(match_id)

    async def watch(self, match_id: str) -> None:
        """Somebody wants this match's odds: estimate after each of its events for the
        next ``odds_watch_s`` seconds, in every API process (through Redis)."""
        until = time.time() + self._watch_s
        if self._watched.get(match_id, 0.0) < until - WATCH_NOTE_EVERY_S:
            self._watched[match_id] = until
            await self.store.watch(match_id, until)

    def start(self) -> None:
        if self._refresher is None:
            self._refresher = asyncio.create_task(self._refresh_loop(), name="odds-watched")

    async def _refresh_loop(self) -> None:
        while True:
            now = time.time()
            try:
                shared = await self.store.watched(now)
            except Exception as error:  # Redis away: this process's own interests still count
                log.warning("could not read the watched matches from Redis: %s", error)
                shared = {}
            mine = {m: t for m, t in self._watched.items() if t > now}
            for match_id, until in shared.items():
                mine[match_id] = max(until, mine.get(match_id, 0.0))
            self._watched = mine
            await asyncio.sleep(WATCHED_REFRESH_S)

    def poke(self, match_id: str, version: int | None = None) -> None:
        """Estimate the match at ``version`` (None: its latest) soon."""
        self._wanted.setdefault(match_id, set()).add(version)
        if match_id in self._tasks:
            return
        if len(self._tasks) >= MAX_MATCHES:
            self._wanted.pop(match_id, None)  # its next event asks again
            return
        task = asyncio.create_task(self._run(match_id), name=f"odds-{match_id}")
        self._tasks[match_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(match_id, None))

    async def idle(self, timeout_s: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self._tasks:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise TimeoutError(f"{len(self._tasks)} estimate(s) still running")
            await asyncio.wait(list(self._tasks.values()), timeout=left)

    async def stop(self, timeout_s: float = 5.0) -> None:
        tasks = [t for t in (self._refresher, *self._tasks.values()) if t is not None]
        self._refresher = None
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)

    async def _run(self, match_id: str) -> None:
        try:
            while wanted := self._wanted.pop(match_id, None):
                for version in sorted(wanted, key=lambda v: -1 if v is None else v):
                    await self._estimate(match_id, version)
        except NotFound:
            self._wanted.pop(match_id, None)
        except Exception:
            self._wanted.pop(match_id, None)
            log.exception("could not estimate the odds of match %s", match_id)

    async def _estimate(self, match_id: str, version: int | None) -> None:
        async with self._estimating:
            seen = await self._port.spectator_view(match_id, version)
            assert seen.viewer == "spectator", "the odds are computed from a spectator's view only"
            known = await self.store.latest(match_id, seen.version)
            if known is not None and known.version == seen.version:
                return
            result = await asyncio.to_thread(estimate, seen, self._budget, view_seed(seen))
        await self.store.put(
            match_id,
            StoredOdds(
                version=result.version,
                p=result.p,
                playouts=result.playouts,
                computed_at=datetime.now(UTC),
            ),
        )
        self.estimates += 1
