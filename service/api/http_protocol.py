"""uvicorn's httptools protocol, sending each response in one write.

uvicorn writes a response's status line and headers as soon as the app sends
``http.response.start``, and the body on ``http.response.body``: two socket
writes (uvloop sends each at once), two TCP segments, and a client that wakes
up for each. Here the writes a request makes within one event-loop iteration
(a Litestar response sends both messages back to back) are joined and sent
once, at the end of that iteration: one system call per response on the
server and one wake-up on the client (bench/bench_api.py, docs/api.md
"Performance").

Nothing else changes: bytes and their order are the same, and ``close`` sends
what is held first. A WebSocket upgrade keeps the coalescing transport: the
frames a socket is sent in one iteration go out in one write as well.

It also bounds a request's head (request line and headers) to
``MAX_HEAD_BYTES``: httptools sets no limit, so a client could make the server
buffer a header of any size. A bigger head is answered ``431 Request Header
Fields Too Large`` (problem+json) and the connection is closed.

    uvicorn --http service.api.http_protocol:CoalescingHttpToolsProtocol ...
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

PROTOCOL = "service.api.http_protocol:CoalescingHttpToolsProtocol"
"""What to pass as uvicorn's ``http`` (``--http``)."""

WS_MAX_MESSAGE_BYTES: Final = 4096
"""The largest message a live client may send (uvicorn's ``ws_max_size``): a hello
with its token, a seat's command or a view request, each well under it.
uvicorn's default (16 MB) would let each socket make the server buffer that
much; a bigger message closes the socket with 1009."""


class CoalescingTransport:
    """Stands in for an ``asyncio.Transport``: holds the writes made during one
    loop iteration and sends them together; everything else is the transport's."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Send what is held (no-op if nothing is, or if the transport is closing)."""
        held = self._held
        if not held:
            return
        self._held = []
        if not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(b) for b in self._held)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


MAX_HEAD_BYTES: Final = 16 * 1024
"""The largest request line plus headers accepted (Node's default; nginx allows
8 KB per header line). An honest request here is well under 2 KB."""


LINGER_S: Final = 2.0
"""After a 431, how long the connection stays open to drain what the client still sends."""


class HeadTooLarge(Exception):
    """Raised from a parser callback; httptools turns it into a parser error."""


def _response_431() -> bytes:
    body = json.dumps(
        {
            "type": "https://matcha.example/problems/request_headers_too_large",
            "title": "Request Header Fields Too Large",
            "status": 431,
            "code": "request_headers_too_large",
            "detail": f"The request line and headers are larger than {MAX_HEAD_BYTES} bytes.",
        }
    ).encode()
    return (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
        b"content-type: application/problem+json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n"
        b"connection: close\r\n\r\n" + body
    )


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` whose responses go out in one write, with a bounded
    request head (module docstring)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = CoalescingTransport(transport, self.loop)  # type: ignore[assignment]
        self._in_head = True
        """Between requests, or inside one's request line and headers."""
        self._head_received = 0
        """Bytes received while in a head (whole chunks: a guard against one endless line)."""
        self._head_parsed = 0
        """The request line and headers parsed so far (exact)."""
        self._head_too_large = False
        self._discarding = False

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        if self._in_head:
            self._head_received += len(data)
        super().data_received(data)
        # Still in the head after a whole chunk: all of it was head. The parser
        # buffers a header line until it ends, so an endless one is cut here.
        if self._in_head and self._head_received > MAX_HEAD_BYTES and not self._head_too_large:
            self._refuse_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_parsed = 0

    def on_url(self, url: bytes) -> None:
        self._head_parsed += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_parsed += len(name) + len(value) + 4
        if self._head_parsed > MAX_HEAD_BYTES:
            self._head_too_large = True
            raise HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True  # what follows is the next request's head
        self._head_received = 0

    def send_400_response(self, msg: str) -> None:
        # uvicorn answers every parser error with 400; a head too large is a 431.
        if self._head_too_large:
            self._refuse_head()
            return
        super().send_400_response(msg)

    def _refuse_head(self) -> None:
        """Answer 431 and hang up, gently: the client may still be sending the
        rest of its head, and closing a socket with unread data would reset the
        connection and lose the answer. So the answer goes out with a FIN, what
        still arrives is dropped, and the socket closes after LINGER_S."""
        self._head_too_large = True
        self._in_head = False
        self._discarding = True
        self.transport.write(_response_431())
        transport = self.transport
        if isinstance(transport, CoalescingTransport):
            transport.flush()
        if transport.can_write_eof():
            transport.write_eof()
            self.loop.call_later(LINGER_S, transport.close)
        else:
            transport.close()

    def handle_websocket_upgrade(self) -> None:
        # The WebSocket protocol takes over the connection with the coalescing
        # transport too (what an earlier response left held is sent first): the
        # frames a socket is sent within one loop iteration (a stream's batch of
        # events, an ack with them) go out in one write, not one system call and
        # one client wake-up per frame. The real transport still drives the
        # protocol (``set_protocol``, flow control); only writes are held.
        if isinstance(self.transport, CoalescingTransport):
            self.transport.flush()
        super().handle_websocket_upgrade()
