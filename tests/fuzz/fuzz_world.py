"""The fuzz tests' world: one real server (uvicorn in a thread), on a database of
its own, with a small world already in it (players of every role, a ladder, a
live match, a tournament) so that generated requests reach real resources, not
only 404s. How long the tests run: ``MATCHA_FUZZ_*`` and ``MATCHA_SERVICE_*``
(``make test`` keeps the defaults, ``make fuzz`` raises them). A module of its
own: ``from conftest import`` would find another folder's conftest first."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from litestar import Litestar

from service.embedded import free_port

EXAMPLES = int(os.environ.get("MATCHA_FUZZ_EXAMPLES", "2"))
"""Hypothesis examples per operation and role (``make fuzz``: 60)."""
STATEFUL_STEPS = int(os.environ.get("MATCHA_FUZZ_STEPS", "12"))
"""Steps of each stateful scenario."""
STATEFUL_RUNS = int(os.environ.get("MATCHA_FUZZ_SCENARIOS", "6"))
"""Stateful scenarios per role."""
SERVICE_EXAMPLES = int(os.environ.get("MATCHA_SERVICE_EXAMPLES", "3"))
"""Scenarios of the whole-service property test."""
SERVICE_STEPS = int(os.environ.get("MATCHA_SERVICE_STEPS", "14"))
"""Steps of each of its scenarios."""


@dataclass
class World:
    """The server, and who and what is in it."""

    base: str
    app: Litestar
    database_url: str
    admin: str
    tokens: dict[str, str | None]
    ids: dict[str, str] = field(default_factory=dict)


@contextmanager
def serve(app: Litestar) -> Iterator[str]:
    """``app`` under uvicorn in a thread until the block ends; its base URL."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="error")
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


def seed(base: str, app: Litestar, database_url: str, admin: str) -> World:
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
        app=app,
        database_url=database_url,
        admin=admin,
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
