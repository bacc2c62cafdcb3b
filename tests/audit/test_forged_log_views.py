"""A view of a forged log is a 409 ``match_log_inconsistent``, never a 5xx: a row
duplicated at the next version, or a move's seat flipped with the chain recomputed,
leave a log that no longer folds into a match. Every reader is told the same,
whoever asks, and the record route agrees."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from audit_api import Account, Api, admin_token
from audit_forgery import Forger
from litestar.testing import AsyncTestClient

from schemas.events import decode_event
from service.app import create_app
from service.bots import random_bot
from service.bots.seat_view import bot_request
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api(database_url: str, redis_server_url: str, redis_prefix: str) -> AsyncIterator[Api]:
    token = admin_token()
    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=token, admin_name="admin"),
    )
    async with AsyncTestClient(create_app(settings)) as client:
        yield Api(client, token)


async def _played(api: Api, moves: int) -> tuple[str, Account, Account]:
    """A live ladder match in which the seats made ``moves`` plays or passes."""
    match_id, a, b = await api.new_match()
    rng = random.Random(5)
    seats = (a, b)
    for _ in range(moves):
        view = await api.view(match_id, a)
        seat = view["to_move"]
        mine = await api.view(match_id, seats[seat])
        request = bot_request(mine, random_bot, rng)
        assert request is not None
        route, body = request
        answer = await api.post(f"/api/matches/{match_id}/{route}", seats[seat], body)
        assert answer.status_code == 200, answer.text
    return match_id, a, b


async def _every_reader_gets_409(api: Api, match_id: str, seats: tuple[Account, ...]) -> None:
    for who in (*seats, None, api.admin):
        for path in (f"/api/matches/{match_id}", f"/api/matches/{match_id}/events"):
            response = await api.get(path, who)
            assert response.status_code == 409, (path, response.text)
            body: dict[str, Any] = response.json()
            assert body["code"] == "match_log_inconsistent", body
            assert response.headers["content-type"].startswith("application/problem+json")
    record = await api.get(f"/api/matches/{match_id}/record", api.admin)
    assert record.status_code == 409 and record.json()["code"] == "match_log_inconsistent"


async def test_given_a_row_duplicated_at_the_next_version_every_view_is_409(
    api: Api, admin_database_url: str
) -> None:
    match_id, a, b = await _played(api, 3)
    assert (await api.get(f"/api/matches/{match_id}", a)).status_code == 200  # cached fold
    forger = Forger(admin_database_url, match_id)
    rows = await forger.rows()
    played = next(r for r in reversed(rows) if r["type"] == "card_played")
    event = decode_event(json.dumps(played["data"]))
    await forger.insert(rows[-1]["version"] + 1, event, played["actor"])
    await forger.rechain()
    await _every_reader_gets_409(api, match_id, (a, b))


async def test_given_a_moves_seat_flipped_with_the_chain_recomputed_every_view_is_409(
    api: Api, admin_database_url: str
) -> None:
    match_id, a, b = await _played(api, 6)
    forger = Forger(admin_database_url, match_id)
    rows = await forger.rows()
    played = next(r for r in rows if r["type"] == "card_played")
    await forger.set_data(played["version"], {**played["data"], "seat": 1 - played["data"]["seat"]})
    await forger.rechain()
    await _every_reader_gets_409(api, match_id, (a, b))
