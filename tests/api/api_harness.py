"""The API tests' client: a few steps every test needs, over real HTTP calls."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from litestar import Litestar
from litestar.testing import AsyncTestClient

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


def command_request(move: dict[str, Any], hand: list[str], rng: Any) -> tuple[str, dict[str, Any]]:
    """The route and body for one of a view's ``legal_moves`` (a random bot's choice).

    For keeping, the view lists only "keep none" and "keep all"; the bot keeps
    a random subset of its hand instead, to exercise every choice.
    """
    match move["type"]:
        case "play_card":
            return "play", {"card": move["card"], "target": move["target"]}
        case "pass":
            return "pass", {}
        case "keep_cards":
            return "keep", {"cards": [c for c in hand if rng.random() < 0.5]}
        case "resign":
            return "resign", {}
    raise AssertionError(f"unknown move {move}")


async def play_out(
    api: Api,
    match_id: str,
    seats: tuple[Account, Account],
    rng: Any,
    *,
    max_commands: int = 3000,
) -> dict[str, Any]:
    """Two random bots play the match to its end over HTTP; return seat 0's final view.

    Each bot reads only its own view (``GET /api/matches/{id}``) and sends one
    of its legal moves, with the version it saw as ``expected_version``.
    """
    views = [await api.view(match_id, seats[0]), await api.view(match_id, seats[1])]
    for _ in range(max_commands):
        if views[0]["result"] is not None:
            return views[0]
        acted = False
        for seat in (0, 1):
            mine = views[seat]
            moves = [m for m in mine["legal_moves"] if m["type"] != "resign"]
            if not moves:
                continue
            route, body = command_request(
                rng.choice(moves), list(mine["seats"][seat]["hand"] or []), rng
            )
            body["expected_version"] = mine["version"]
            response = await api.client.post(
                f"/api/matches/{match_id}/{route}", json=body, headers=seats[seat].auth
            )
            assert response.status_code == 200, response.text
            acted = True
            views[seat] = response.json()["view"]
            views[1 - seat] = await api.view(match_id, seats[1 - seat])
        assert acted, f"nobody can move in {views[0]}"
    raise AssertionError("the match did not end")
