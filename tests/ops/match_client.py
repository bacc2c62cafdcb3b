"""Plays a Matcha match over HTTP with any httpx client (test client or a real server)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from service.api.seat_state import bot_request
from service.bots import heuristic_bot, random_bot


@dataclass(frozen=True)
class Account:
    id: str
    name: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def register(client: httpx.AsyncClient, name: str | None = None) -> Account:
    name = name or f"p-{uuid.uuid4().hex[:8]}"
    response = await client.post("/api/players", json={"name": name})
    assert response.status_code == 201, response.text
    body = response.json()
    return Account(id=body["id"], name=body["name"], token=body["token"])


async def new_match(
    client: httpx.AsyncClient, admin_token: str
) -> tuple[str, str, Account, Account]:
    """A fresh ladder with two members paired into a match: (ladder, match, seat 0, seat 1)."""
    admin = {"Authorization": f"Bearer {admin_token}"}
    organiser = await register(client)
    promoted = await client.post(
        f"/api/admin/players/{organiser.id}/roles", json={"roles": ["organiser"]}, headers=admin
    )
    assert promoted.status_code == 200, promoted.text
    ladder = await client.post(
        "/api/ladders", json={"name": f"ladder-{uuid.uuid4().hex[:8]}", "ruleset": "standard"},
        headers=organiser.auth,
    )
    assert ladder.status_code == 201, ladder.text
    ladder_id = str(ladder.json()["id"])
    a, b = await register(client), await register(client)
    for member in (a, b):
        joined = await client.post(f"/api/ladders/{ladder_id}/members", headers=member.auth)
        assert joined.status_code == 200, joined.text
    paired = await client.post(
        f"/api/ladders/{ladder_id}/matches", json={"players": [a.id, b.id]},
        headers=organiser.auth,
    )
    assert paired.status_code == 201, paired.text
    return ladder_id, str(paired.json()["match_id"]), a, b


async def view(client: httpx.AsyncClient, match_id: str, account: Account) -> dict[str, Any]:
    response = await client.get(f"/api/matches/{match_id}", headers=account.auth)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def play_out(
    client: httpx.AsyncClient, match_id: str, seats: tuple[Account, Account],
    rng: random.Random, max_commands: int = 3000,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Two bots play to the end; returns seat 0's final view and the commands sent by route."""
    sent: dict[str, int] = {}
    views = [await view(client, match_id, seats[0]), await view(client, match_id, seats[1])]
    bots = (random_bot, heuristic_bot)
    for _ in range(max_commands):
        if views[0]["result"] is not None:
            return views[0], sent
        acted = False
        for seat in (0, 1):
            request = bot_request(views[seat], bots[seat], rng)
            if request is None:
                continue
            route, body = request
            body["expected_version"] = views[seat]["version"]
            response = await client.post(
                f"/api/matches/{match_id}/{route}", json=body, headers=seats[seat].auth
            )
            assert response.status_code == 200, response.text
            sent[route] = sent.get(route, 0) + 1
            acted = True
            views[seat] = response.json()["view"]
            views[1 - seat] = await view(client, match_id, seats[1 - seat])
        assert acted, f"nobody can move in {views[0]}"
    raise AssertionError("the match did not end")
