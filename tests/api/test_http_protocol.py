"""service.api.http_protocol: a response goes out in one write, byte for byte the same."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from litestar import Litestar, get, head, websocket
from litestar.connection import WebSocket
from litestar.response import Stream

from service.api.http_protocol import CoalescingHttpToolsProtocol, CoalescingTransport

pytestmark = pytest.mark.anyio


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


async def test_writes_of_one_loop_iteration_are_sent_once_in_order() -> None:
    raw = FakeTransport()
    t = CoalescingTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"HTTP/1.1 200 OK\r\n\r\n")
    t.write(b"")
    t.write(bytearray(b"body"))
    assert raw.writes == []
    assert t.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody")
    await asyncio.sleep(0)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    t.write(b"next")
    await asyncio.sleep(0)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody", b"next"]
    assert t.get_extra_info("peername") == "info:peername"  # the rest is the transport's


async def test_close_sends_what_is_held_first_and_abort_drops_it() -> None:
    raw = FakeTransport()
    t = CoalescingTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"last words")
    t.close()
    assert raw.writes == [b"last words"] and raw.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing to send
    assert raw.writes == [b"last words"]

    raw = FakeTransport()
    t = CoalescingTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"never sent")
    t.abort()
    await asyncio.sleep(0)
    assert raw.writes == [] and raw.aborted


@get("/hello", sync_to_thread=False)
def hello() -> dict[str, str]:
    return {"hello": "world"}


@head("/hello-head", sync_to_thread=False)
def hello_head() -> None:
    return None


@get("/stream", sync_to_thread=False)
def stream() -> Stream:
    return Stream(iter([b"one,", b"two,", b"three"]))


@websocket("/ws")
async def echo(socket: WebSocket[Any, Any, Any]) -> None:
    await socket.accept()
    await socket.send_text("echo:" + await socket.receive_text())
    await socket.close()


@websocket("/burst")
async def burst(socket: WebSocket[Any, Any, Any]) -> None:
    """Three frames back to back once the client says go (a stream's batch)."""
    await socket.accept()
    await socket.receive_text()
    for n in range(3):
        await socket.send_text(f"frame {n}")
    await socket.receive_text()
    await socket.close()


SOCKET_WRITES: list[bytes] = []


class CountingTransport:
    """The real transport, recording what is written to the socket."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def write(self, data: bytes) -> None:
        SOCKET_WRITES.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CountedProtocol(CoalescingHttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CountingTransport(transport))  # type: ignore[arg-type]


@pytest.fixture
async def server_port() -> AsyncIterator[int]:
    SOCKET_WRITES.clear()
    app = Litestar([hello, hello_head, stream, echo, burst])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, http=CountedProtocol, log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    yield port
    server.should_exit = True
    await task


async def _read_response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
    if b"content-length" in headers:
        return head, await reader.readexactly(int(headers[b"content-length"]))
    body = b""
    while True:  # chunked
        size = int((await reader.readline()).strip(), 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return head, body
        body += chunk[:-2]


async def test_responses_on_one_keep_alive_connection_each_go_out_in_one_write(
    server_port: int,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server_port)
    for n in range(1, 4):
        writer.write(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = await _read_response(reader)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert body == b'{"hello":"world"}'
        assert len(SOCKET_WRITES) == n  # head and body in one write
        assert SOCKET_WRITES[-1] == head + body
    writer.write(b"HEAD /hello-head HTTP/1.1\r\nHost: x\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    writer.write(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body = await _read_response(reader)
    assert b"transfer-encoding: chunked" in head
    assert body == b"one,two,three"
    writer.write(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, body = await _read_response(reader)
    assert body == b'{"hello":"world"}'
    assert await reader.read() == b""  # closed after the response was sent
    writer.close()


async def test_a_websocket_upgrade_still_works(server_port: int) -> None:
    from websockets.asyncio.client import connect

    async with connect(f"ws://127.0.0.1:{server_port}/ws") as ws:
        await ws.send("hi")
        assert await ws.recv() == "echo:hi"


async def test_given_three_websocket_frames_sent_in_one_iteration_then_they_go_out_in_one_write(
    server_port: int,
) -> None:
    from websockets.asyncio.client import connect

    async with connect(f"ws://127.0.0.1:{server_port}/burst", compression=None) as ws:
        after_handshake = len(SOCKET_WRITES)
        await ws.send("go")
        assert [await ws.recv() for _ in range(3)] == ["frame 0", "frame 1", "frame 2"]
        assert len(SOCKET_WRITES) == after_handshake + 1
        assert SOCKET_WRITES[-1].count(b"frame ") == 3
        await ws.send("bye")
