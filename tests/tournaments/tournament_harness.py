"""What the tournament service tests share: the API client with tournament
steps, scripted match results, and reading the projections back."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from harness import Account, Api

from service.embedded import free_port
from service.settings import Settings

ADMIN_TOKEN = "tournament-admin-token-" + "t" * 20

__all__ = ["ADMIN_TOKEN", "Account", "ApiProcess", "TournamentApi", "decisive_loser"]


def decisive_loser(match_id: str, players: tuple[str, str]) -> int:
    """A scripted result: the seat that resigns, fixed by the match id (the same
    pairing gives the same result in every run of a test)."""
    return int(match_id.replace("-", ""), 16) % 2


class TournamentApi(Api):
    def __init__(self, client: Any) -> None:
        super().__init__(client, ADMIN_TOKEN)

    async def create(
        self, organiser: Account, ladder_id: str, fmt: dict[str, Any], **extra: Any
    ) -> dict[str, Any]:
        response = await self.post(
            "/api/tournaments",
            organiser,
            {"name": f"cup {time.monotonic_ns()}", "ladder_id": ladder_id, "format": fmt, **extra},
        )
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    async def enter(self, tournament_id: str, account: Account) -> None:
        response = await self.post(f"/api/tournaments/{tournament_id}/players", account)
        assert response.status_code == 200, response.text

    async def start(self, tournament_id: str, organiser: Account) -> dict[str, Any]:
        response = await self.post(f"/api/tournaments/{tournament_id}/start", organiser)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def read(self, tournament_id: str, what: str = "") -> dict[str, Any]:
        path = f"/api/tournaments/{tournament_id}" + (f"/{what}" if what else "")
        response = await self.client.get(path)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def open_games(self, tournament_id: str) -> list[dict[str, Any]]:
        rounds = (await self.read(tournament_id, "rounds"))["rounds"]
        return [
            g
            for r in rounds
            for g in r["games"]
            if g["result"] is None and not g["annulled"] and g["match_id"]
        ]

    async def resign(self, match_id: str, who: Account) -> None:
        response = await self.post(f"/api/matches/{match_id}/resign", who)
        assert response.status_code == 200, response.text

    async def wait_for(self, check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
        """Poll ``check`` (async) until it returns something truthy; bounded."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = await check()
            if found:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError("the tournament did not get there in time")
            await asyncio.sleep(0.05)

    async def play_round(
        self,
        tournament_id: str,
        accounts: dict[str, Account],
        loser: Callable[[str, tuple[str, str]], int] = decisive_loser,
    ) -> int:
        """Resign every open game by its scripted loser, once its match exists."""
        games = await self.open_games(tournament_id)
        for game in games:

            async def started(match_id: str = game["match_id"]) -> bool:
                response = await self.client.get(f"/api/matches/{match_id}")
                return response.status_code == 200

            await self.wait_for(started)
            seat = loser(game["match_id"], tuple(game["players"]))
            await self.resign(game["match_id"], accounts[game["players"][seat]])
        resigned = {g["game"] for g in games}

        async def recorded() -> bool:
            return not resigned & {g["game"] for g in await self.open_games(tournament_id)}

        await self.wait_for(recorded)
        return len(games)


ROOT = Path(__file__).resolve().parents[2]


class ApiProcess:
    """The real app in a uvicorn process of its own, to stop gracefully or kill."""

    def __init__(self, settings: Settings, admin_token: str, **env: str) -> None:
        self.port = free_port()
        self.env = {
            **os.environ,
            "DATABASE_URL": settings.database.url,
            "MATCHA_MIGRATE_ON_START": "0",
            "REDIS_URL": settings.redis.url,
            "MATCHA_REDIS_PREFIX": settings.redis.prefix,
            "MATCHA_ADMIN_TOKEN": admin_token,
            "MATCHA_TOURNAMENT_POLL_S": "0.3",
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ApiProcess:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "service.app:create_app",
                "--factory",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"API exited: {self.proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base}/api/tournaments", timeout=2).is_success:
                    return self
            if time.monotonic() > deadline:
                raise TimeoutError("the API process did not start")
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL: no lifespan shutdown, no chance to finish anything."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(15)

    def stop(self) -> None:
        """A graceful shutdown (SIGINT), bounded; a kill if it does not come."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(15)
