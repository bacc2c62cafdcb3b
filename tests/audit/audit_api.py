"""The audit API tests' client: accounts, ladders and whole matches over HTTP."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient


def admin_token() -> str:
    """A bootstrap admin token of the test's own: the API caches tokens per process
    for a few seconds, so a token shared by two tests' apps (two databases) would
    let the second test act as the first one's admin."""
    return f"audit-admin-{uuid.uuid4().hex}"


@dataclass
class Account:
    id: str
    name: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class Api:
    def __init__(self, client: AsyncTestClient[Litestar], admin_token: str) -> None:
        self.client = client
        self.admin = Account(id="", name="admin", token=admin_token)

    async def get(self, path: str, who: Account | None, **params: Any) -> Any:
        return await self.client.get(path, headers=who.auth if who else {}, params=params)

    async def post(self, path: str, who: Account | None, body: Any = None) -> Any:
        return await self.client.post(path, json=body or {}, headers=who.auth if who else {})

    async def register(self) -> Account:
        response = await self.post("/api/players", None, {"name": f"p-{uuid.uuid4().hex[:8]}"})
        assert response.status_code == 201, response.text
        body = response.json()
        return Account(id=body["id"], name=body["name"], token=body["token"])

    async def with_role(self, role: str) -> Account:
        account = await self.register()
        response = await self.post(
            f"/api/admin/players/{account.id}/roles", self.admin, {"roles": [role]}
        )
        assert response.status_code == 200, response.text
        return account

    async def admin_id(self) -> str:
        response = await self.get("/api/me", self.admin)
        assert response.status_code == 200, response.text
        return str(response.json()["id"])

    async def ladder(self, organiser: Account, members: list[Account], **extra: Any) -> str:
        response = await self.post(
            "/api/ladders",
            organiser,
            {"name": f"ladder-{uuid.uuid4().hex[:8]}", "ruleset": "standard", **extra},
        )
        assert response.status_code == 201, response.text
        ladder_id = str(response.json()["id"])
        for member in members:
            joined = await self.post(f"/api/ladders/{ladder_id}/members", member)
            assert joined.status_code == 200, joined.text
        return ladder_id

    async def pair(self, ladder_id: str, organiser: Account, a: Account, b: Account) -> str:
        response = await self.post(
            f"/api/ladders/{ladder_id}/matches", organiser, {"players": [a.id, b.id]}
        )
        assert response.status_code == 201, response.text
        return str(response.json()["match_id"])

    async def view(self, match_id: str, who: Account) -> dict[str, Any]:
        response = await self.get(f"/api/matches/{match_id}", who)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def play_out(
        self, match_id: str, seats: tuple[Account, Account], rng: random.Random
    ) -> dict[str, Any]:
        """Two random bots play the match to its end; seat 0's final view."""
        for _ in range(5000):
            views = [await self.view(match_id, seats[0]), await self.view(match_id, seats[1])]
            if views[0]["result"] is not None:
                return views[0]
            seat = next(s for s in (0, 1) if views[s]["legal_moves"])
            move = rng.choice(views[seat]["legal_moves"])
            route, body = {
                "play_card": ("play", lambda m: {"card": m["card"], "target": m["target"]}),
                "pass": ("pass", lambda m: {}),
                "keep_cards": ("keep", lambda m: {"cards": m["cards"]}),
            }[move["type"]]
            response = await self.post(
                f"/api/matches/{match_id}/{route}", seats[seat], body(move)
            )
            assert response.status_code == 200, response.text
        raise AssertionError("the match did not end")

    async def resign(self, match_id: str, loser: Account) -> None:
        response = await self.post(f"/api/matches/{match_id}/resign", loser)
        assert response.status_code == 200, response.text
