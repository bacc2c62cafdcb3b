"""A request's line and headers are bounded (service/api/http_protocol.py): 431, then close.

The protocol is the one `matcha api` and `matcha run` give uvicorn; a small app
stands in for the service (the limit is in the HTTP layer, below any route).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator

import pytest
import uvicorn
from litestar import Litestar, Request, get, post

from service.api.http_protocol import MAX_HEAD_BYTES, PROTOCOL, CoalescingHttpToolsProtocol
from service.serve import serve

pytestmark = pytest.mark.anyio


@get("/hello", sync_to_thread=False)
def hello() -> dict[str, str]:
    return {"hello": "world"}


@post("/echo-size", status_code=200)
async def echo_size(request: Request) -> dict[str, int]:  # type: ignore[type-arg]
    return {"bytes": len(await request.body())}


@pytest.fixture
async def port() -> AsyncIterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            Litestar([hello, echo_size], request_max_body_size=2_000_000),
            host="127.0.0.1",
            port=free,
            http=CoalescingHttpToolsProtocol,
            log_level="error",
        )
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    yield free
    server.should_exit = True
    await asyncio.wait_for(task, 10)


async def _exchange(port: int, *parts: bytes, pause: float = 0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for part in parts:
            writer.write(part)
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
    except ConnectionError:
        pass  # the server hung up on us mid-send: what it said is still readable
    answer = await asyncio.wait_for(reader.read(), 10)  # until the server closes
    writer.close()
    return answer


def _status_and_body(answer: bytes) -> tuple[int, bytes, bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head, body


async def test_a_200_kb_header_is_refused_with_431_as_problem_json(port: int) -> None:
    big = b"x" * 200_000
    answer = await _exchange(port, b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + big + b"\r\n\r\n")
    status, head, body = _status_and_body(answer)
    assert status == 431
    assert b"content-type: application/problem+json" in head
    problem = json.loads(body)
    assert problem["status"] == 431 and problem["code"] == "request_headers_too_large"
    assert str(MAX_HEAD_BYTES) in problem["detail"]


async def test_many_small_headers_over_the_limit_are_refused_too(port: int) -> None:
    headers = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 50) for i in range(MAX_HEAD_BYTES // 50))
    answer = await _exchange(port, b"GET /hello HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    assert _status_and_body(answer)[0] == 431


async def test_an_endless_header_line_sent_slowly_is_cut_off(port: int) -> None:
    chunks = [b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: "] + [b"y" * 4096] * 8
    answer = await _exchange(port, *chunks, pause=0.01)
    assert _status_and_body(answer)[0] == 431


async def test_honest_requests_pass_a_big_body_included_and_keep_alive_still_works(
    port: int,
) -> None:
    body = b"z" * 1_000_000
    near_limit = b"X-Fill: " + b"f" * (MAX_HEAD_BYTES - 200) + b"\r\n"
    answer = await _exchange(
        port,
        b"POST /echo-size HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body,
        b"GET /hello HTTP/1.1\r\nHost: x\r\n" + near_limit + b"Connection: close\r\n\r\n",
    )
    assert answer.count(b"HTTP/1.1 200 OK") == 2, answer[:300]
    assert b'{"bytes":1000000}' in answer and b'{"hello":"world"}' in answer


def test_matcha_api_serves_with_this_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: seen.update(options))
    # serve() exports the URLs for its workers: put the environment back afterwards.
    for name in ("DATABASE_URL", "REDIS_URL"):
        monkeypatch.setenv(name, "")  # recorded: monkeypatch restores what was there (or nothing)
    from service.settings import DatabaseSettings, Settings

    serve(Settings(database=DatabaseSettings(url="postgresql://unused")), "127.0.0.1", 1)
    assert seen["http"] == PROTOCOL
