"""uvicorn's httptools protocol, sending each response in one write.

uvicorn writes a response's status line and headers as soon as the app sends
``http.response.start``, and the body on ``http.response.body``: two socket
writes (uvloop sends each at once), two TCP segments, and a client that wakes
up for each. Here the writes a request makes within one event-loop iteration
(a Litestar response sends both messages back to back) are joined and sent
once, at the end of that iteration: one system call per response on the
server and one wake-up on the client (bench/bench_api.py, docs/api.md
"Performance").

Nothing else changes: bytes and their order are the same, ``close`` sends
what is held first, and a WebSocket upgrade gets the real transport.

    uvicorn --http service.api.http_protocol:CoalescingHttpToolsProtocol ...
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

PROTOCOL = "service.api.http_protocol:CoalescingHttpToolsProtocol"
"""What to pass as uvicorn's ``http`` (``--http``)."""


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


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` whose responses go out in one write (module docstring)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._raw_transport = transport
        self.transport = CoalescingTransport(transport, self.loop)  # type: ignore[assignment]

    def handle_websocket_upgrade(self) -> None:
        # The WebSocket protocol takes over the real transport (nothing is held
        # yet: an upgrade is the connection's first request or follows a
        # finished response, whose bytes are sent first).
        if isinstance(self.transport, CoalescingTransport):
            self.transport.flush()
            self.transport = self._raw_transport
        super().handle_websocket_upgrade()
