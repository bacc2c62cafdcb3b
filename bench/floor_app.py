"""The stack's floor: the least a durable, fanned-out move costs on Matcha's stack (issue 25).

A bare Litestar WebSocket route, no middleware, no rules, served by uvicorn
like the API (``bench/bench_api.py`` starts it with the same workers). Per
move it does what any durable move service must and nothing else: one
``INSERT`` of a ~300-byte row through a psycopg pool (autocommit: the insert
is its own commit, one fsync), one Redis ``PUBLISH``, one ack to the mover.
Two routes, so one server serves both variants:

* ``/floor/{match}/{seat}``: the above;
* ``/floor-fanout/{match}/{seat}``: the same, and every worker subscribes to
  the published moves and sends each one to the opponent's socket when it
  holds it: the frame to the other seat through a Redis subscription on every
  worker, as Matcha's live hub does.

A message is a JSON object with ``id`` and anything else (the move); the ack is
``{"kind":"ack","id":...}``, the opponent's frame ``{"kind":"move",...}``.

    DATABASE_URL=... REDIS_URL=... MATCHA_REDIS_PREFIX=... \\
        uvicorn --factory bench.floor_app:create_app --workers 2
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Litestar, WebSocket, get, websocket
from psycopg_pool import AsyncConnectionPool
from redis.asyncio import Redis

SCHEMA = """
CREATE TABLE IF NOT EXISTS floor_moves (
    id bigserial PRIMARY KEY,
    match_id text NOT NULL,
    seat int NOT NULL,
    move jsonb NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
)
"""
INSERT = "INSERT INTO floor_moves (match_id, seat, move) VALUES (%s, %s, %s::jsonb)"


class Move(msgspec.Struct):
    id: str


class Floor:
    """A worker's pool, Redis client and the sockets it holds, by (match, seat)."""

    def __init__(self) -> None:
        self.pool: AsyncConnectionPool | None = None
        self.redis: Redis | None = None
        prefix = os.environ.get("MATCHA_REDIS_PREFIX", "floor")
        self.channel = prefix + ":floor-moves"
        """The fan-out route's moves: every worker subscribes."""
        self.quiet_channel = prefix + ":floor-moves-unwatched"
        """The plain route's: nobody subscribes (Redis stores and drops them)."""
        self.sockets: dict[tuple[str, int], WebSocket[Any, Any, Any]] = {}
        self.listener: asyncio.Task[None] | None = None

    async def listen(self) -> None:
        """Every published move of the fan-out route goes to the opponent's socket
        if this worker holds it (the first 40 bytes name the match and seat)."""
        assert self.redis is not None
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(self.channel)
        async for message in pubsub.listen():
            if message["type"] != "message":
                continue
            data: bytes = message["data"]
            match_id, seat, frame = data.split(b" ", 2)
            opponent = self.sockets.get((match_id.decode(), 1 - int(seat)))
            if opponent is not None:
                with contextlib.suppress(Exception):  # it may be closing
                    await opponent.send_text(frame.decode())


FLOOR = Floor()
_decode = msgspec.json.Decoder(Move).decode


async def _moves(socket: WebSocket[Any, Any, Any], match_id: str, seat: int, fanout: bool) -> None:
    pool, redis = FLOOR.pool, FLOOR.redis
    assert pool is not None and redis is not None
    await socket.accept()
    key = (match_id, seat)
    if fanout:
        FLOOR.sockets[key] = socket
    try:
        while True:
            text = await socket.receive_text()
            move = _decode(text)
            async with pool.connection() as conn:
                await conn.execute(INSERT, (match_id, seat, text))
            frame = f'{{"kind":"move","seat":{seat},"move":{text}}}'
            if fanout:
                await redis.publish(FLOOR.channel, f"{match_id} {seat} {frame}")
            else:
                await redis.publish(FLOOR.quiet_channel, frame)
            await socket.send_text(f'{{"kind":"ack","id":"{move.id}"}}')
    except Exception:  # the client went away (WebSocketDisconnect) or sent garbage
        pass
    finally:
        if FLOOR.sockets.get(key) is socket:
            del FLOOR.sockets[key]


@websocket("/floor/{match_id:str}/{seat:int}")
async def floor(socket: WebSocket[Any, Any, Any], match_id: str, seat: int) -> None:
    await _moves(socket, match_id, seat, fanout=False)


@websocket("/floor-fanout/{match_id:str}/{seat:int}")
async def floor_fanout(socket: WebSocket[Any, Any, Any], match_id: str, seat: int) -> None:
    await _moves(socket, match_id, seat, fanout=True)


@get("/up")
async def up() -> str:
    return "up"


@contextlib.asynccontextmanager
async def _lifespan(app: Litestar) -> AsyncIterator[None]:
    FLOOR.pool = AsyncConnectionPool(
        os.environ["DATABASE_URL"], min_size=2, max_size=20, kwargs={"autocommit": True}, open=False
    )
    await FLOOR.pool.open(wait=True, timeout=10)
    FLOOR.redis = Redis.from_url(os.environ["REDIS_URL"])
    FLOOR.listener = asyncio.create_task(FLOOR.listen())
    try:
        yield
    finally:
        FLOOR.listener.cancel()
        with contextlib.suppress(BaseException):
            await FLOOR.listener
        await FLOOR.redis.aclose()
        await FLOOR.pool.close()


def create_app() -> Litestar:
    return Litestar([floor, floor_fanout, up], lifespan=[_lifespan])
