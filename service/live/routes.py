"""Live routes (WebSocket and Server-Sent Events) and their start-up.

Mounted by ``service.live.plugin.LivePlugin`` (listed in the API's
``PLUGINS``): ``ROUTES`` are the handlers; ``start_live`` creates this
process's hub, registers the after-commit publisher and starts listening.
The protocol is described in docs/live.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import Any, Protocol

import psycopg
from litestar import Litestar, Request, WebSocket, get, websocket
from litestar.datastructures import State
from litestar.exceptions import WebSocketDisconnect
from litestar.response import ServerSentEvent, ServerSentEventMessage
from uvicorn.protocols.utils import ClientDisconnected

from service.accounts.guards import token_from_header
from service.broker.publish import Publisher
from service.errors import MatchaError, NotFound, Unauthorized, Unavailable, ValidationFailed
from service.live import commands, metrics
from service.live.access import Access, parse_since, resolve
from service.live.config import LiveSettings
from service.live.hub import Hub
from service.live.render import FrameCache
from service.live.stream import Lagging, LobbyStream, Outbound, ViewerStream
from service.live.wire import (
    CLOSE_BAD_REQUEST,
    CLOSE_GOING_AWAY,
    CLOSE_LAGGING,
    CLOSE_NOT_FOUND,
    CLOSE_TRY_AGAIN_LATER,
    CLOSE_UNAUTHORIZED,
    UNREADABLE,
    hello_decoder,
)
from service.matches import Committed
from service.ops.stopping import process_stop

log = logging.getLogger("matcha.live")

CLOSE_SERVICE_RESTART = 1012
"""The server is stopping (SIGTERM, a rolling deploy): reconnect, to another one."""
RESTART_RETRY_MS = 1000
"""The retry hint of a Server-Sent Events stream the server ends because it stops."""


class _Stopping(Exception):
    """The process is stopping (``Hub.close_all``): the stream ends with a resume hint."""


class LiveRuntime:
    """What one process needs for live play, kept on ``app.state.live``."""

    def __init__(self, hub: Hub, publisher: Publisher | None, frames: FrameCache) -> None:
        self.hub = hub
        self.publisher = publisher
        self.frames = frames
        self.open = 0
        """Live connections this process serves now (``holding``)."""
        self.on_spectator: list[Callable[[str], Awaitable[None]]] = []
        """``await fn(match_id)`` when a spectator starts watching a match (the odds
        of a watched match are estimated after each of its events: service.botplay)."""
        self._unregister_stop: Callable[[], None] = lambda: None
        self._unregister_count: Callable[[], None] = lambda: None

    def close_on_stop(self, loop: asyncio.AbstractEventLoop) -> None:
        """When the process is asked to stop, end every stream at once (on ``loop``)."""

        def schedule() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(self.hub.close_all)

        self._unregister_stop = process_stop.on_stop(schedule)
        self._unregister_count = process_stop.count_open(lambda: self.open)

    def check_room(self) -> None:
        """Raise ``Unavailable`` when this process is stopping or holds
        ``max_connections`` already."""
        if self.hub.stopping:
            raise Unavailable(
                "This server is restarting; connect again in a moment.", code="server_restarting"
            )
        if self.open >= self.hub.settings.max_connections:
            metrics.refused_full.inc()
            raise Unavailable(
                "This server holds as many live connections as it may; try again shortly.",
                code="too_many_connections",
            )

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Count one live connection for as long as it is served: here, against
        ``max_connections``, and in the process-wide gauge /metrics shows."""
        self.open += 1
        metrics.connections.inc()
        try:
            yield
        finally:
            self.open -= 1
            metrics.connections.dec()

    async def stop(self) -> None:
        self._unregister_stop()
        self._unregister_count()
        self.hub.close_all()
        if self.publisher is not None:
            await self.publisher.drain()
        await self.hub.stop()


async def start_live(app: Litestar) -> None:
    """At start (``LivePlugin``): the hub (one Redis subscription), the publisher, the frames."""
    settings = app.state.settings
    store = app.state.store
    live_settings = LiveSettings()

    core = app.state.matches

    async def load_page(match_id: str, after: int, limit: int) -> Any:
        rows = await store.load(match_id, after=after, limit=limit)
        # The rows another process appended, read for this process's streams, also
        # bring its fold of the match forward: a seat's view and next command here
        # then need no read of their own (``Known.learn``; ``commands.answer``).
        core.learn(match_id, rows)
        return rows

    async def load_log(match_id: str) -> Any:
        return await store.load(match_id)

    hub = Hub(
        broker=app.state.broker,  # the process's one broker (service.app)
        prefix=settings.redis.prefix,
        load_page=load_page,
        settings=live_settings,
    )
    await hub.start()

    async def remember(committed: Committed) -> None:
        hub.remember(committed.match_id, committed.stored)

    # First: the rows are kept before the hint that makes a stream want them is sent.
    app.state.matches.after_commit.append(remember)
    publisher = None
    if app.state.redis is not None:
        publisher = Publisher(app.state.redis, settings.redis.prefix, load_log=load_log)
        app.state.matches.after_commit.append(publisher)
    runtime = LiveRuntime(hub, publisher, FrameCache())
    runtime.close_on_stop(asyncio.get_running_loop())
    app.state.live = runtime


def _runtime(state: State) -> LiveRuntime:
    runtime: LiveRuntime = state.live
    return runtime


async def _spectating(runtime: LiveRuntime, access: Access) -> None:
    if access.seen.viewer != "spectator":
        return
    for hook in runtime.on_spectator:
        try:
            await hook(access.match_id)
        except Exception:  # a nicety for spectators: never refuse the stream for it
            log.exception("a spectator hook failed for match %s", access.match_id)


def _open_stream(runtime: LiveRuntime, access: Access, since: int) -> ViewerStream:
    return ViewerStream(
        runtime.hub,
        match_id=access.match_id,
        seen=access.seen,
        since=since,
        render=runtime.frames.renderer(access.seen.hide, access.salt),
    )


# ---- WebSocket ------------------------------------------------------------------


async def _hello_token(socket: WebSocket[Any, Any, Any], wait_s: float) -> str | None:
    """A token from the first message, if the client sends one soon enough."""
    try:
        raw = await asyncio.wait_for(socket.receive_data(mode="text"), wait_s)
    except TimeoutError:
        return None
    try:
        return hello_decoder.decode(raw).token
    except UNREADABLE as exc:
        raise ValidationFailed(
            'The first message must be {"kind": "hello", "token": ...}.'
        ) from exc


async def _close(socket: WebSocket[Any, Any, Any], code: int, reason: str) -> None:
    with contextlib.suppress(Exception):
        # A client that stopped reading may not take the close either: do not wait for it.
        await asyncio.wait_for(socket.close(code=code, reason=reason), 2)


def _close_code(error: MatchaError) -> int:
    if isinstance(error, NotFound):
        return CLOSE_NOT_FOUND
    if isinstance(error, Unauthorized):
        return CLOSE_UNAUTHORIZED
    return CLOSE_BAD_REQUEST


async def _drain_incoming(socket: WebSocket[Any, Any, Any]) -> None:
    """Read (and ignore) what the client sends, so a close is noticed at once."""
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            await socket.receive_data(mode="text")


async def _take_commands(socket: WebSocket[Any, Any, Any], access: Access) -> None:
    """Read what the client of a match socket sends, answering each command (an
    ack or a refusal) in the order they came; a close is noticed at once."""
    core = socket.app.state.matches
    catch_up = _runtime(socket.app.state).hub.load_after
    path = socket.url.path
    send: Callable[[Any], Awaitable[None]] = socket.send
    with contextlib.suppress(WebSocketDisconnect, ClientDisconnected):
        while True:
            raw = await socket.receive_data(mode="text")
            reply = await commands.answer(core, access, raw, path, catch_up)
            if reply is not None:
                await send({"type": "websocket.send", "text": reply})


class _Sending:
    """When the frame being sent started (None: not sending): the watchdog reads it."""

    __slots__ = ("since",)

    def __init__(self) -> None:
        self.since: float | None = None


class _Source(Protocol):
    def take(self) -> list[Outbound] | None: ...

    def wakeup(self) -> asyncio.Future[None]: ...

    async def next_frames(self) -> list[Outbound]: ...

    def close(self) -> None: ...


async def _next_or_stop(
    hub: Hub, next_frames: Callable[[], Awaitable[list[Outbound]]]
) -> list[Outbound]:
    """``next_frames()``, unless the process stops first (then ``_Stopping``).

    Only the slow path (a start, a read from the store) races the stop: the hot
    path checks ``hub.stopping`` after each wake-up, which ``close_all`` causes.
    """
    if hub.stopping:
        raise _Stopping
    reading = asyncio.ensure_future(next_frames())
    stopped = asyncio.ensure_future(hub.stopped.wait())
    try:
        await asyncio.wait({reading, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if not reading.done():
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reading
        raise _Stopping
    return reading.result()


async def _due_frames(hub: Hub, source: _Source) -> list[Outbound]:
    """The next frames to send (never none); ``_Stopping`` once the process stops.

    The hot path: a wake-up takes every frame that is due at once (one task step,
    not one per frame, and no coroutine of the stream's own unless it must read
    the store).
    """
    while True:
        if hub.stopping:
            raise _Stopping
        frames = source.take()
        if frames is None:
            return await _next_or_stop(hub, source.next_frames)
        if frames:
            return frames
        await source.wakeup()


async def _send_frames(
    socket: WebSocket[Any, Any, Any], hub: Hub, source: _Source, sending: _Sending
) -> None:
    """The hot path: per frame, one ASGI send of the shared text and nothing else."""
    send: Callable[[Any], Awaitable[None]] = socket.send
    clock = asyncio.get_running_loop().time
    while True:
        frames = await _due_frames(hub, source)
        sending.since = clock()  # a batch is due at once: the watchdog times it as one
        for frame in frames:
            await send({"type": "websocket.send", "text": frame.data})
        sending.since = None


async def _watchdog(sending: _Sending, timeout_s: float) -> None:
    """A client that does not take a frame in ``timeout_s`` must not hold a stream.

    One check every half timeout instead of a timer around every send.
    """
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(timeout_s / 2)
        if sending.since is not None and loop.time() - sending.since > timeout_s:
            raise TimeoutError("client not reading")


async def _serve_socket(
    socket: WebSocket[Any, Any, Any],
    hub: Hub,
    source: _Source,
    timeout_s: float,
    incoming: Coroutine[Any, Any, None] | None = None,
) -> tuple[int, str]:
    """Send frames until the client leaves or the stream ends; the close code and reason.

    ``incoming`` reads what the client sends (default: read and ignore it).
    """
    sending = _Sending()
    sender = asyncio.create_task(_send_frames(socket, hub, source, sending))
    tasks = {
        sender,
        asyncio.create_task(incoming if incoming is not None else _drain_incoming(socket)),
        asyncio.create_task(_watchdog(sending, timeout_s)),
    }
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        source.close()
    for task in done:
        error = None if task.cancelled() else task.exception()
        if isinstance(error, _Stopping):
            return CLOSE_SERVICE_RESTART, _resume_hint("server restarting: reconnect", source)
        if isinstance(error, Lagging):
            return CLOSE_LAGGING, f"since={error.last_version}"
        if isinstance(error, TimeoutError):
            return CLOSE_GOING_AWAY, "client not reading"
        if isinstance(error, psycopg.OperationalError):  # the store restarts: not a bug
            log.warning("live stream stopped: database unavailable (%s)", error)
            return CLOSE_TRY_AGAIN_LATER, "database unavailable: reconnect with since"
        if error is not None and not isinstance(error, WebSocketDisconnect | ClientDisconnected):
            log.error("live stream failed", exc_info=error)
            return 1011, "internal error: reconnect with since"
    return 1000, ""


def _resume_hint(text: str, source: object) -> str:
    """``text``, plus where a match stream resumes (``since``; a lobby has none)."""
    sent = getattr(source, "sent", None)
    return text if sent is None else f"{text} with since={sent}"


@websocket("/api/matches/{match_id:str}/ws", name="live_match_ws")
async def match_socket(socket: WebSocket[Any, Any, Any], match_id: str) -> None:
    """Live events of a match, redacted for the caller. See docs/live.md."""
    runtime = _runtime(socket.app.state)
    await socket.accept()
    if await _refused_when_full(socket, runtime):
        return
    with runtime.holding():
        await _serve_match_socket(socket, runtime, match_id)


async def _refused_when_full(socket: WebSocket[Any, Any, Any], runtime: LiveRuntime) -> bool:
    """Close an accepted socket with 1013 when this process serves its maximum."""
    try:
        runtime.check_room()
    except Unavailable as refused:
        code = CLOSE_SERVICE_RESTART if runtime.hub.stopping else CLOSE_TRY_AGAIN_LATER
        await _close(socket, code, refused.detail[:120])
        return True
    return False


async def _serve_match_socket(
    socket: WebSocket[Any, Any, Any], runtime: LiveRuntime, match_id: str
) -> None:
    try:
        since = parse_since(socket.query_params.get("since"))
        token = socket.query_params.get("token") or token_from_header(
            socket.headers.get("authorization")
        )
        if token is None:
            token = await _hello_token(socket, runtime.hub.settings.hello_wait_s)
        access = await resolve(socket.app.state, match_id, token)
    except MatchaError as error:
        await socket.close(code=_close_code(error), reason=error.detail[:120])
        return
    except psycopg.OperationalError as error:
        log.warning("live stream refused: database unavailable (%s)", error)
        await _close(socket, CLOSE_TRY_AGAIN_LATER, "database unavailable: retry shortly")
        return
    except WebSocketDisconnect:
        return
    conn_id = runtime.hub.join(match_id, access.role)
    await _spectating(runtime, access)
    try:
        stream = _open_stream(runtime, access, since)
        code, reason = await _serve_socket(
            socket,
            runtime.hub,
            stream,
            runtime.hub.settings.send_timeout_s,
            _take_commands(socket, access),
        )
    finally:
        runtime.hub.leave(match_id, conn_id)
    await _close(socket, code, reason)


@websocket("/api/lobby/ws", name="live_lobby_ws")
async def lobby_socket(socket: WebSocket[Any, Any, Any]) -> None:
    """Lobby summaries (matches started, finished, scores) as they happen."""
    runtime = _runtime(socket.app.state)
    await socket.accept()
    if await _refused_when_full(socket, runtime):
        return
    with runtime.holding():
        code, reason = await _serve_socket(
            socket, runtime.hub, LobbyStream(runtime.hub), runtime.hub.settings.send_timeout_s
        )
    await _close(socket, code, reason)


# ---- Server-Sent Events ----------------------------------------------------------


def _restart_message(source: object) -> ServerSentEventMessage:
    """The last message of a stream the server ends because it stops: EventSource
    reconnects after ``retry`` ms, with ``Last-Event-ID`` (a match) where it was."""
    sent = getattr(source, "sent", None)
    # never empty: an EventSource drops a message without data (its retry still counts)
    return ServerSentEventMessage(
        data="reconnect" if sent is None else f"since={sent}",
        event="restart",
        retry=RESTART_RETRY_MS,
    )


async def _sse_events(
    runtime: LiveRuntime, access: Access, since: int
) -> AsyncIterator[ServerSentEventMessage]:
    conn_id = runtime.hub.join(access.match_id, access.role)
    await _spectating(runtime, access)
    stream = _open_stream(runtime, access, since)
    try:
        with runtime.holding():
            while True:
                for frame in await _due_frames(runtime.hub, stream):
                    if frame.version is not None:
                        yield ServerSentEventMessage(data=frame.data, id=frame.version)
                    elif frame.data.startswith('{"kind":"ping"'):
                        yield ServerSentEventMessage(data=frame.data, event="ping")
                    elif frame.data.startswith('{"kind":"odds"'):
                        yield ServerSentEventMessage(data=frame.data, event="odds")
                    else:
                        yield ServerSentEventMessage(data=frame.data, event="presence")
    except Lagging as lag:
        # EventSource reconnects by itself with Last-Event-ID: exactly a resume.
        yield ServerSentEventMessage(data=f"since={lag.last_version}", event="lagging")
    except _Stopping:
        yield _restart_message(stream)
    finally:
        stream.close()
        runtime.hub.leave(access.match_id, conn_id)


@get(
    ["/api/matches/{match_id:str}/stream", "/api/matches/{match_id:str}/events/stream"],
    operation_id="streamMatchEvents",
    tags=["live"],
    security=[],
    media_type="text/event-stream",
)
async def match_stream(request: Request[Any, Any, Any], match_id: str) -> ServerSentEvent:
    """Server-Sent Events of a match: ``id`` is the version; ``Last-Event-ID`` resumes.

    Token: ``Authorization: Bearer`` or ``?token=`` (EventSource cannot set headers).
    """
    runtime = _runtime(request.app.state)
    since = parse_since(request.headers.get("last-event-id") or request.query_params.get("since"))
    token = request.query_params.get("token") or token_from_header(
        request.headers.get("authorization")
    )
    access = await resolve(request.app.state, match_id, token)
    runtime.check_room()
    return ServerSentEvent(
        _sse_events(runtime, access, since),
        retry_duration=1000,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _sse_lobby(runtime: LiveRuntime) -> AsyncIterator[ServerSentEventMessage]:
    stream = LobbyStream(runtime.hub)
    try:
        with runtime.holding():
            while True:
                for frame in await _due_frames(runtime.hub, stream):
                    if frame.data.startswith('{"kind":"ping"'):
                        yield ServerSentEventMessage(data=frame.data, event="ping")
                    else:
                        yield ServerSentEventMessage(data=frame.data, event="lobby")
    except _Stopping:
        yield _restart_message(stream)
    finally:
        stream.close()


@get(
    "/api/lobby/stream",
    operation_id="streamLobby",
    tags=["live"],
    security=[],
    media_type="text/event-stream",
)
async def lobby_stream(request: Request[Any, Any, Any]) -> ServerSentEvent:
    """Server-Sent Events of the lobby: a summary each time a match starts, scores, ends."""
    runtime = _runtime(request.app.state)
    runtime.check_room()
    return ServerSentEvent(_sse_lobby(runtime), retry_duration=1000)


ROUTES = [match_socket, lobby_socket, match_stream, lobby_stream]

__all__ = ["ROUTES", "LiveRuntime", "start_live"]
