"""The audit API tests' client: accounts, ladders and whole matches over HTTP."""

from __future__ import annotations

import random
import uuid
from typing import Any

import harness
from harness import Account

from service.bots import random_bot

__all__ = ["Account", "Api", "admin_token"]


def admin_token() -> str:
    """A bootstrap admin token of the test's own: the API caches tokens per process
    for a few seconds, so a token shared by two tests' apps (two databases) would
    let the second test act as the first one's admin."""
    return f"audit-admin-{uuid.uuid4().hex}"


class Api(harness.Api):
    """The shared test client (tests/harness.py) with the audit tests' own steps."""

    async def admin_id(self) -> str:
        response = await self.get("/api/me", self.admin)
        assert response.status_code == 200, response.text
        return str(response.json()["id"])

    async def play_out(
        self, match_id: str, seats: tuple[Account, Account], rng: random.Random
    ) -> dict[str, Any]:
        """Two random bots play the match to its end; seat 0's final view."""
        return await harness.play_out(
            self, match_id, seats, rng, bots=(random_bot, random_bot), max_commands=5000
        )

    async def resign(self, match_id: str, loser: Account) -> None:
        response = await self.post(f"/api/matches/{match_id}/resign", loser)
        assert response.status_code == 200, response.text
