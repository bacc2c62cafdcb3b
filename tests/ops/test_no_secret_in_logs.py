"""No bearer token is ever written to a log: a whole match against a real `matcha api`
process, watched over WebSocket with ``?token=`` and over SSE with the header, played
with ``Authorization`` on every command, and the process's whole log searched for
every token used."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from harness import Api, play_out

from service.embedded import free_port
from service.ops.logging import redact_secrets

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "log-test-admin-" + "q" * 30


def test_redaction_takes_a_token_out_of_a_query_and_a_header_and_leaves_the_rest() -> None:
    line = 'x - "WebSocket /api/matches/m/ws?since=2&token=s3cr-t.T0ken" [accepted]'
    assert (
        redact_secrets(line)
        == 'x - "WebSocket /api/matches/m/ws?since=2&token=[redacted]" [accepted]'
    )
    assert redact_secrets("Authorization: Bearer abc.DEF-123") == "Authorization: Bearer [redacted]"
    assert redact_secrets("GET /api/matches?limit=5 200") == "GET /api/matches?limit=5 200"


async def test_a_whole_match_leaves_no_token_in_the_logs(
    database_url: str, redis_server_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    from websockets.asyncio.client import connect

    port = free_port()
    log_file = tmp_path / "api.log"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_server_url,
        "MATCHA_REDIS_PREFIX": redis_prefix,
        "MATCHA_ADMIN_TOKEN": ADMIN_TOKEN,
        "MATCHA_LOG_LEVEL": "DEBUG",
        "MATCHA_LOG_FORMAT": "json",
        "MATCHA_LIVE_HELLO_WAIT_S": "0.2",
    }
    with log_file.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "api", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            async with httpx.AsyncClient(base_url=base, timeout=20) as client:
                while True:
                    assert proc.poll() is None, log_file.read_text()[-2000:]
                    try:
                        if (await client.get("/healthz")).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    assert time.monotonic() < deadline, "the API did not start"
                    await asyncio.sleep(0.2)
                api = Api(client, ADMIN_TOKEN)
                match_id, a, b = await api.new_match("duel")
                ws = await connect(
                    f"ws://127.0.0.1:{port}/api/matches/{match_id}/ws?token={a.token}",
                    ping_interval=None,
                )
                sse = f"/api/matches/{match_id}/stream?token={b.token}"
                async with client.stream("GET", sse) as stream:
                    assert stream.status_code == 200
                    await play_out(api, match_id, (a, b), random.Random(4))
                await ws.close()
                # A wrong token is refused, and not written down either.
                bad = await client.get(
                    "/api/me", headers={"Authorization": "Bearer not-a-real-one-77"}
                )
                assert bad.status_code == 401
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    text = log_file.read_text()
    assert "WebSocket" in text or "/ws" in text, "the log did not record the socket at all"
    assert f"/api/matches/{match_id}" in text
    for secret in (ADMIN_TOKEN, a.token, b.token, "not-a-real-one-77"):
        assert secret not in text, f"a token is in the log: {secret[:6]}…"
