"""The API tests' client: a few steps every test needs, over real HTTP calls."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.api.seat_state import bot_request
from service.bots import Bot, heuristic_bot, random_bot
from service.engine import State

ADMIN_TOKEN = "admin-token-for-tests-" + "x" * 20


@dataclass
class Account:
    id: str
    name: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class Api:
    """The test's HTTP client, with a few steps every test needs."""

    def __init__(self, client: AsyncTestClient[Litestar]) -> None:
        self.client = client
        self.admin = Account(id="", name="admin", token=ADMIN_TOKEN)

    async def register(self, name: str | None = None) -> Account:
        name = name or f"p-{uuid.uuid4().hex[:8]}"
        response = await self.client.post("/api/players", json={"name": name})
        assert response.status_code == 201, response.text
        body = response.json()
        return Account(id=body["id"], name=body["name"], token=body["token"])

    async def organiser(self) -> Account:
        account = await self.register()
        response = await self.client.post(
            f"/api/admin/players/{account.id}/roles",
            json={"roles": ["organiser"]},
            headers=self.admin.auth,
        )
        assert response.status_code == 200, response.text
        return account

    async def ladder(self, organiser: Account, ruleset: str = "standard", **extra: Any) -> str:
        response = await self.client.post(
            "/api/ladders",
            json={"name": f"ladder-{uuid.uuid4().hex[:8]}", "ruleset": ruleset, **extra},
            headers=organiser.auth,
        )
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

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

    async def new_match(
        self, ruleset: str = "standard", **ladder: Any
    ) -> tuple[str, Account, Account]:
        """A fresh ladder with two members paired into a match: (match_id, seat 0, seat 1)."""
        organiser = await self.organiser()
        ladder_id = await self.ladder(organiser, ruleset, **ladder)
        a, b = await self.register(), await self.register()
        await self.join(ladder_id, a)
        await self.join(ladder_id, b)
        return await self.pair(ladder_id, organiser, a, b), a, b

    async def view(self, match_id: str, account: Account | None) -> dict[str, Any]:
        headers = account.auth if account else {}
        response = await self.client.get(f"/api/matches/{match_id}", headers=headers)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


async def events_rows(url: str, match_id: str) -> list[tuple[Any, ...]]:
    """Every stored column of a match's events, to compare logs byte for byte."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT position, version, type, data::text, actor, recorded_at, prev_hash, hash"
            " FROM events WHERE match_id = %s ORDER BY version",
            (match_id,),
        )
        return await cur.fetchall()


async def play_out(
    api: Api,
    match_id: str,
    seats: tuple[Account, Account],
    rng: random.Random,
    *,
    bots: tuple[Bot, Bot] = (random_bot, heuristic_bot),
    max_commands: int = 3000,
) -> dict[str, Any]:
    """Two bots play the match to its end over HTTP; return seat 0's final view.

    Each bot reads only its own view (``GET /api/matches/{id}`` and the
    command responses) and sends its command with the version it saw.
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
            acted = True
            views[seat] = response.json()["view"]
            views[1 - seat] = await api.view(match_id, seats[1 - seat])
        assert acted, f"nobody can move in {views[0]}"
    raise AssertionError("the match did not end")


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status and machine-readable code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["type"] == f"https://matcha.example/problems/{code}"
    assert body["title"] and body["detail"] and body["instance"]
    return body


async def omniscient_state(url: str, match_id: str) -> State:
    """The whole truth of a match: its events folded with its seed, read from the database."""
    from schemas.events import decode_event
    from service.engine import fold

    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT data::text FROM events WHERE match_id = %s ORDER BY version", (match_id,)
        )
        events = [decode_event(row[0]) for row in await cur.fetchall()]
        cur = await conn.execute("SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,))
        row = await cur.fetchone()
    return fold(events, row[0] if row else None)
