"""The real app under uvicorn, in a thread, on a free port: what the browser talks to."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from service.app import create_app
from service.embedded import free_port
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings


@contextmanager
def running_app(database_url: str, redis_url: str, redis_prefix: str) -> Iterator[Api]:
    """Serve ``create_app`` until the block ends; yield a client of it.

    Each app gets its own admin token: the API remembers tokens per process
    for a few seconds, and every test's app lives in this one process.
    """
    admin_token = secrets.token_urlsafe(16)
    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False, pool_min=1, pool_max=8),
        redis=RedisSettings(url=redis_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=admin_token, admin_name="admin"),
    )
    port = free_port()
    config = uvicorn.Config(
        create_app(settings),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="websockets-sansio",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="web-test-uvicorn", daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the app did not start")
        time.sleep(0.05)
    client = Api(base, admin_token)
    try:
        yield client
    finally:
        client.http.close()
        server.should_exit = True
        thread.join(timeout=10)


class Api:
    """Just enough of the HTTP API to set a match up and read the truth back."""

    def __init__(self, base: str, admin_token: str) -> None:
        self.base = base
        self.admin_token = admin_token
        self.http = httpx.Client(base_url=base, timeout=10)

    def call(self, method: str, path: str, token: str | None = None, **kw: object) -> object:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        res = self.http.request(method, path, headers=headers, **kw)  # type: ignore[arg-type]
        assert res.status_code < 400, f"{method} {path}: {res.status_code} {res.text}"
        return res.json()

    def register(self, name: str) -> dict[str, str]:
        return self.call("POST", "/api/players", json={"name": name})  # type: ignore[return-value]

    def ladder(self, name: str, ruleset: str = "duel", **extra: object) -> str:
        body = {"name": name, "ruleset": ruleset, **extra}
        ladder = self.call("POST", "/api/ladders", self.admin_token, json=body)
        return ladder["id"]  # type: ignore[index]

    def start_match(self, ladder_id: str, tokens: list[str], player_ids: list[str]) -> str:
        for token in tokens:
            self.call("POST", f"/api/ladders/{ladder_id}/members", token)
        started = self.call(
            "POST",
            f"/api/ladders/{ladder_id}/matches",
            self.admin_token,
            json={"players": player_ids},
        )
        return started["match_id"]  # type: ignore[index]

    def alice_and_bob(
        self, ladder_name: str, ruleset: str, **extra: object
    ) -> tuple[str, str, list[dict[str, str]]]:
        """Alice and Bob join a new ladder and the admin pairs them:
        (ladder id, match id, [alice, bob])."""
        alice, bob = self.register("alice"), self.register("bob")
        ladder = self.ladder(ladder_name, ruleset, **extra)
        seats = [alice["id"], bob["id"]]
        match_id = self.start_match(ladder, [alice["token"], bob["token"]], seats)
        return ladder, match_id, [alice, bob]
