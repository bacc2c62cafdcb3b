"""The HTTP steps every service test takes: accounts, roles, ladders, pairings,
views, and two bots playing a match to its end.

One client for every folder (api, audit, ops, live): it talks to any
``httpx.AsyncClient`` (litestar's ``AsyncTestClient`` is one, and so is a
client of a real server), so what "set up a match" means lives in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import uvicorn

from service.bots import Bot, heuristic_bot, random_bot
from service.bots.seat_view import bot_request
from service.embedded import free_port
from service.settings import Settings


class HandClock:
    """A clock moved by hand (``clock.at += ...``): what a test injects as the match
    core's ``now``, so that "1 ms early" is exact and nothing sleeps."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass(frozen=True)
class Account:
    id: str
    name: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return bearer(self.token)


class Api:
    """A test's HTTP client, with the steps every test needs; each asserts its status."""

    def __init__(self, client: httpx.AsyncClient, admin_token: str) -> None:
        self.client = client
        self.admin = Account(id="", name="admin", token=admin_token)

    async def get(self, path: str, who: Account | None, **params: Any) -> Any:
        return await self.client.get(path, headers=who.auth if who else {}, params=params)

    async def post(self, path: str, who: Account | None, body: Any = None) -> Any:
        return await self.client.post(path, json=body or {}, headers=who.auth if who else {})

    async def register(self, name: str | None = None) -> Account:
        name = name or f"p-{uuid.uuid4().hex[:8]}"
        response = await self.client.post("/api/players", json={"name": name})
        assert response.status_code == 201, response.text
        body = response.json()
        return Account(id=body["id"], name=body["name"], token=body["token"])

    async def with_role(self, role: str) -> Account:
        """A new account the admin has given ``role``."""
        account = await self.register()
        response = await self.client.post(
            f"/api/admin/players/{account.id}/roles",
            json={"roles": [role]},
            headers=self.admin.auth,
        )
        assert response.status_code == 200, response.text
        return account

    async def organiser(self) -> Account:
        return await self.with_role("organiser")

    async def ladder(
        self,
        organiser: Account,
        ruleset: str = "standard",
        *,
        members: Iterable[Account] = (),
        **extra: Any,
    ) -> str:
        """A new ladder (``extra``: its other settings) that ``members`` have joined."""
        response = await self.client.post(
            "/api/ladders",
            json={"name": f"ladder-{uuid.uuid4().hex[:8]}", "ruleset": ruleset, **extra},
            headers=organiser.auth,
        )
        assert response.status_code == 201, response.text
        ladder_id = str(response.json()["id"])
        for member in members:
            await self.join(ladder_id, member)
        return ladder_id

    async def join(self, ladder_id: str, account: Account) -> None:
        response = await self.client.post(f"/api/ladders/{ladder_id}/members", headers=account.auth)
        assert response.status_code == 200, response.text

    async def pair(self, ladder_id: str, organiser: Account, a: Account, b: Account) -> str:
        response = await self.client.post(
            f"/api/ladders/{ladder_id}/matches",
            json={"players": [a.id, b.id]},
            headers=organiser.auth,
        )
        assert response.status_code == 201, response.text
        return str(response.json()["match_id"])

    async def new_ladder_match(
        self, ruleset: str = "standard", **ladder: Any
    ) -> tuple[str, str, Account, Account]:
        """A fresh ladder with two members paired into a match: (ladder, match, seat 0, seat 1)."""
        organiser = await self.organiser()
        a, b = await self.register(), await self.register()
        ladder_id = await self.ladder(organiser, ruleset, members=(a, b), **ladder)
        return ladder_id, await self.pair(ladder_id, organiser, a, b), a, b

    async def new_match(
        self, ruleset: str = "standard", **ladder: Any
    ) -> tuple[str, Account, Account]:
        """A fresh ladder with two members paired into a match: (match, seat 0, seat 1)."""
        _, match_id, a, b = await self.new_ladder_match(ruleset, **ladder)
        return match_id, a, b

    async def view(self, match_id: str, who: Account | None) -> dict[str, Any]:
        response = await self.get(f"/api/matches/{match_id}", who)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


async def play_out(
    api: Api,
    match_id: str,
    seats: tuple[Account, Account],
    rng: random.Random,
    *,
    bots: tuple[Bot, Bot] = (random_bot, heuristic_bot),
    max_commands: int = 3000,
    sent: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Two bots play the match to its end over HTTP; return seat 0's final view.

    Each bot reads only its own view (``GET /api/matches/{id}`` and the
    command responses) and sends its command with the version it saw.
    ``sent``, when given, counts the commands sent by route.
    """
    views = [await api.view(match_id, seats[0]), await api.view(match_id, seats[1])]
    for _ in range(max_commands):
        if views[0]["result"] is not None:
            return views[0]
        acted = False
        for seat in (0, 1):
            request = bot_request(views[seat], bots[seat], rng)
            if request is None:
                continue
            route, body = request
            body["expected_version"] = views[seat]["version"]
            response = await api.client.post(
                f"/api/matches/{match_id}/{route}", json=body, headers=seats[seat].auth
            )
            assert response.status_code == 200, response.text
            if sent is not None:
                sent[route] = sent.get(route, 0) + 1
            acted = True
            views[seat] = response.json()["view"]
            views[1 - seat] = await api.view(match_id, seats[1 - seat])
        assert acted, f"nobody can move in {views[0]}"
    raise AssertionError("the match did not end")


@contextlib.asynccontextmanager
async def serve_in_process(settings: Settings, app: Any = None) -> AsyncIterator[str]:
    """The real app (``app``, else one made from ``settings``) under uvicorn on a free
    port, in this event loop; yields its base URL."""
    from service.app import create_app

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app if app is not None else create_app(settings),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            ws_ping_interval=None,
        )
    )
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 30
    while not server.started:
        if task.done():
            task.result()
        if time.monotonic() > deadline:
            raise TimeoutError("uvicorn did not start")
        await asyncio.sleep(0.02)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 15)
