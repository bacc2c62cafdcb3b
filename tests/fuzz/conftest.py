"""Fixtures of the fuzz tests: one real server (uvicorn in a thread) per module, on
a database of its own, with a small world already in it (players of every role, a
ladder, a live match, a tournament) so that generated requests reach real
resources, not only 404s. How long they run: ``MATCHA_FUZZ_EXAMPLES`` (``make
test`` keeps the default, ``make fuzz`` raises it)."""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

sys.path.insert(0, str(Path(__file__).parent))

from service.api.app import create_app
from service.embedded import free_port
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

EXAMPLES = int(os.environ.get("MATCHA_FUZZ_EXAMPLES", "2"))
"""Hypothesis examples per operation and role (``make fuzz``: 60)."""
STATEFUL_STEPS = int(os.environ.get("MATCHA_FUZZ_STEPS", "12"))
"""Steps of each stateful scenario."""
STATEFUL_RUNS = int(os.environ.get("MATCHA_FUZZ_SCENARIOS", "6"))
"""Stateful scenarios per role."""


@dataclass
class World:
    """The server, and who and what is in it."""

    base: str
    tokens: dict[str, str | None]
    ids: dict[str, str] = field(default_factory=dict)


@contextmanager
def _serve(settings: Settings) -> Iterator[str]:
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=free_port(), log_level="error")
    )
    thread = threading.Thread(target=server.run, name="fuzz-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def _seed(base: str, admin: str) -> World:
    """Players of each role, a ladder, a live match and a tournament, over HTTP."""
    http = httpx.Client(base_url=base, timeout=30)

    def call(method: str, path: str, token: str | None, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        answer = http.request(method, path, json=body, headers=headers)
        assert answer.status_code < 300, f"{method} {path}: {answer.text}"
        return answer.json() if answer.content else None

    def player(name: str) -> dict[str, str]:
        made: dict[str, str] = call("POST", "/api/players", None, {"name": name})
        return made

    organiser, alice, bob = player("fuzz-organiser"), player("fuzz-alice"), player("fuzz-bob")
    call("POST", f"/api/admin/players/{organiser['id']}/roles", admin, {"roles": ["organiser"]})
    ladder = call("POST", "/api/ladders", organiser["token"], {"name": "fuzz ladder"})["id"]
    for someone in (alice, bob):
        call("POST", f"/api/ladders/{ladder}/members", someone["token"])
    match = call(
        "POST", f"/api/ladders/{ladder}/matches", organiser["token"],
        {"players": [alice["id"], bob["id"]]},
    )["match_id"]  # fmt: skip
    tournament = call(
        "POST", "/api/tournaments", organiser["token"],
        {"name": "fuzz cup", "ladder_id": ladder, "format": {"type": "swiss", "rounds": 2}},
    )["id"]  # fmt: skip
    http.close()
    return World(
        base=base,
        tokens={
            "anonymous": None,
            "player": alice["token"],
            "organiser": organiser["token"],
            "admin": admin,
        },
        ids={
            "ladder_id": ladder,
            "match_id": match,
            "tournament_id": tournament,
            "player_id": bob["id"],
        },
    )


@pytest.fixture(scope="module")
def world(
    pg_server_url: str, database_template: str, redis_server_url: str, tmp_path_factory: Any
) -> Iterator[World]:
    from service.store.db import scratch_database, with_database

    admin = "fuzz-admin-" + secrets.token_hex(12)
    data = tmp_path_factory.mktemp("fuzz-data")
    with (
        scratch_database(pg_server_url, "fuzz_", template=database_template) as name,
        pytest.MonkeyPatch.context() as env,
    ):
        env.setenv("MATCHA_DATA_DIR", str(data))  # its own signing key and checkpoints
        settings = Settings(
            database=DatabaseSettings(
                url=with_database(pg_server_url, name, user="matcha_app"),
                migrate_on_start=False,
                pool_min=1,
                pool_max=8,
            ),
            redis=RedisSettings(url=redis_server_url, prefix=f"fuzz{secrets.token_hex(4)}"),
            api=ApiSettings(admin_token=admin, admin_name="admin"),
        )
        with _serve(settings) as base:
            yield _seed(base, admin)
