"""Live standings: Server-Sent Events and a WebSocket, the same JSON documents.

Each message is the tournament's ``StandingsView`` (the projection, nothing
secret in it), sent on connect and again whenever the tournament's version
changes: a hint (``hints.Hints``, from this process or over Redis) wakes the
stream at once, and without one it compares versions every
``live_check_s`` seconds. SSE ids are versions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
from litestar import WebSocket, get, websocket
from litestar.datastructures import State
from litestar.exceptions import WebSocketDisconnect
from litestar.response import ServerSentEvent, ServerSentEventMessage
from psycopg_pool import AsyncConnectionPool

from schemas.tournament_views import StandingsView
from service.errors import MatchaError, NotFound
from service.tournaments import reads
from service.tournaments.config import TournamentSettings
from service.tournaments.hints import Hints

_encoder = msgspec.json.Encoder()


def _check_room(state: State) -> None:
    """Refuse (503, or WebSocket 1013) when this process holds all the live connections
    it may (``service.live``'s cap, shared with match streams)."""
    runtime = getattr(state, "live", None)
    if runtime is not None:
        runtime.check_room()


@contextlib.contextmanager
def _holding(state: State) -> Iterator[None]:
    """Count the stream against that cap while it is served."""
    runtime = getattr(state, "live", None)
    if runtime is None:
        yield
        return
    with runtime.holding():
        yield


async def _documents(
    pool: AsyncConnectionPool, hints: Hints, settings: TournamentSettings, tournament_id: str
) -> AsyncIterator[StandingsView]:
    """The standings now, then each time they change (until the caller stops)."""
    sent = -1
    while True:
        moved = hints.waiter(tournament_id)  # before the read: a move after it still wakes us
        async with pool.connection() as conn:
            view = await reads.standings(conn, tournament_id)
        if view.version != sent:
            sent = view.version
            yield view
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(moved.wait(), settings.live_check_s)


@get(
    "/{tournament_id:str}/standings/stream",
    operation_id="tournamentStandingsStream",
    security=[],
    media_type="text/event-stream",
)
async def standings_stream(
    tournament_id: str, pool: AsyncConnectionPool, state: State
) -> ServerSentEvent:
    """The standings as Server-Sent Events (``event: standings``, ``id``: the version)."""
    async with pool.connection() as conn:
        await reads.summary(conn, tournament_id)  # a 404 before the stream opens
    _check_room(state)
    hints: Hints = state.tournament_hints
    settings: TournamentSettings = state.tournament_settings

    async def messages() -> AsyncIterator[ServerSentEventMessage]:
        with _holding(state):
            async for view in _documents(pool, hints, settings, tournament_id):
                yield ServerSentEventMessage(
                    data=_encoder.encode(view).decode(), event="standings", id=str(view.version)
                )

    return ServerSentEvent(messages())


async def _drain(socket: WebSocket[Any, Any, Any]) -> None:
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            await socket.receive_data(mode="text")


async def _send_all(
    socket: WebSocket[Any, Any, Any],
    pool: AsyncConnectionPool,
    hints: Hints,
    settings: TournamentSettings,
    tournament_id: str,
) -> None:
    async for view in _documents(pool, hints, settings, tournament_id):
        text = _encoder.encode({"type": "standings", "standings": view}).decode()
        await asyncio.wait_for(socket.send_text(text), 10)


@websocket("/{tournament_id:str}/ws", name="tournament_standings_ws")
async def standings_socket(socket: WebSocket[Any, Any, Any], tournament_id: str) -> None:
    """The standings over a WebSocket: ``{"type": "standings", "standings": ...}`` messages."""
    state = socket.app.state
    pool: AsyncConnectionPool = state.pool
    await socket.accept()
    try:
        async with pool.connection() as conn:
            await reads.summary(conn, tournament_id)
        _check_room(state)
    except MatchaError as error:
        code = 4404 if isinstance(error, NotFound) else 1013
        with contextlib.suppress(Exception):
            await asyncio.wait_for(socket.close(code=code, reason=error.detail[:120]), 2)
        return
    with _holding(state):
        tasks = {
            asyncio.create_task(_drain(socket)),
            asyncio.create_task(
                _send_all(
                    socket, pool, state.tournament_hints, state.tournament_settings, tournament_id
                )
            ),
        }
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
    with contextlib.suppress(Exception):
        await asyncio.wait_for(socket.close(), 2)
