"""The API tests' client: a few steps every test needs, over real HTTP calls."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from harness import Account, play_out
from harness import Api as _Api
from litestar import Litestar
from litestar.testing import AsyncTestClient

from schemas.events import Event, decode_event
from service.engine import State, fold

ADMIN_TOKEN = "admin-token-for-tests-" + "x" * 20

__all__ = [
    "ADMIN_TOKEN",
    "Account",
    "Api",
    "assert_problem",
    "events_rows",
    "omniscient_state",
    "play_out",
    "stored_log",
]


class Api(_Api):
    """The shared test client (tests/harness.py) as the API tests' admin."""

    def __init__(self, client: AsyncTestClient[Litestar]) -> None:
        super().__init__(client, ADMIN_TOKEN)


async def events_rows(url: str, match_id: str) -> list[tuple[Any, ...]]:
    """Every stored column of a match's events, to compare logs byte for byte."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT position, version, type, data::text, actor, recorded_at, prev_hash, hash"
            " FROM events WHERE match_id = %s ORDER BY version",
            (match_id,),
        )
        return await cur.fetchall()


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


async def stored_log(url: str, match_id: str) -> tuple[list[Event], str | None]:
    """A match's events and its secret seed (None: none stored), read from the database."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT data::text FROM events WHERE match_id = %s ORDER BY version", (match_id,)
        )
        events = [decode_event(row[0]) for row in await cur.fetchall()]
        cur = await conn.execute("SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,))
        row = await cur.fetchone()
    return events, row[0] if row else None


async def recorded_times(url: str, match_id: str) -> list[datetime]:
    """When each of a match's events was recorded, in version order."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT recorded_at FROM events WHERE match_id = %s ORDER BY version", (match_id,)
        )
        return [row[0] for row in await cur.fetchall()]


async def omniscient_state(url: str, match_id: str) -> State:
    """The whole truth of a match: its events folded with its seed, read from the database."""
    events, seed = await stored_log(url, match_id)
    return fold(events, seed)
