"""Racing clients and retried commands: exactly one command wins each version,
the log has no gap and no duplicate, and a retry with the same idempotency key
appends once, also after the app is re-created."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from api_harness import Account, Api, events_rows
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.bots.seat_view import move_request
from service.settings import Settings
from service.store import check_match_chain

pytestmark = pytest.mark.anyio


def _commands(view: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    seat = view["viewer"]
    out: list[tuple[str, dict[str, Any]]] = []
    for move in view["legal_moves"]:
        request = move_request(move)
        if request is not None:
            out.append(request)
    assert out or not view["legal_moves"], seat
    return out


async def _assert_log_is_whole(url: str, match_id: str) -> list[tuple[Any, ...]]:
    rows = await events_rows(url, match_id)
    assert [r[1] for r in rows] == list(range(1, len(rows) + 1)), "versions gapless, no dups"
    return rows


async def test_racing_commands_with_the_same_expected_version_have_one_winner(
    api: Api, database_url: str
) -> None:
    match_id, a, b = await api.new_match()
    seats = (a, b)
    for _ in range(12):
        view0 = await api.view(match_id, a)
        if view0["result"] is not None:
            break
        movers = [s for s in (0, 1) if (await api.view(match_id, seats[s]))["legal_moves"]]
        seat = movers[0]
        view = await api.view(match_id, seats[seat])
        version = view["version"]
        commands = _commands(view) * 3  # several clients per command, all at once
        responses = await asyncio.gather(
            *(
                api.client.post(
                    f"/api/matches/{match_id}/{route}",
                    json={**body, "expected_version": version},
                    headers=seats[seat].auth,
                )
                for route, body in commands
            )
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses.count(200) == 1, statuses
        assert set(statuses) <= {200, 409}, [r.text for r in responses]
        for r in responses:
            if r.status_code == 409:
                assert r.json()["code"] == "version_conflict"
        winner = next(r for r in responses if r.status_code == 200).json()
        assert winner["version"] > version
        rows = await _assert_log_is_whole(database_url, match_id)
        assert len(rows) == winner["version"]
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        assert await check_match_chain(conn, match_id) is None


async def test_racing_commands_without_a_version_never_break_the_log(
    api: Api, database_url: str
) -> None:
    """Without expected_version the server re-decides a lost race on fresh state:
    each command then either lands or is refused by the rules, never half-applied."""
    match_id, a, b = await api.new_match()
    seats = (a, b)
    for _ in range(6):
        views = [await api.view(match_id, seats[s]) for s in (0, 1)]
        if views[0]["result"] is not None:
            break
        sends = [
            api.client.post(f"/api/matches/{match_id}/{route}", json=body, headers=seats[s].auth)
            for s in (0, 1)
            for route, body in (_commands(views[s]) or [("pass", {})])[:4]
        ]
        responses = await asyncio.gather(*sends)
        assert all(r.status_code in {200, 409, 422} for r in responses), [r.text for r in responses]
        assert any(r.status_code == 200 for r in responses)
        await _assert_log_is_whole(database_url, match_id)


async def _play_first_card(
    api: Api, match_id: str, seats: tuple[Account, Account]
) -> tuple[Account, dict[str, Any]]:
    view = await api.view(match_id, seats[0])
    mover = seats[view["to_move"]]
    hand = (await api.view(match_id, mover))["seats"][view["to_move"]]["hand"]
    return mover, {"card": hand[0], "target": "suit"}


async def test_a_retried_command_appends_once_even_after_a_restart(
    api: Api, database_url: str, settings: Settings
) -> None:
    match_id, a, b = await api.new_match()
    mover, body = await _play_first_card(api, match_id, (a, b))
    key = {"Idempotency-Key": "retry-me", **mover.auth}
    url = f"/api/matches/{match_id}/play"

    first = await api.client.post(url, json=body, headers=key)
    assert first.status_code == 200, first.text
    rows = await events_rows(database_url, match_id)

    again = await api.client.post(url, json=body, headers=key)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert await events_rows(database_url, match_id) == rows

    # The opponent moves on; the retry still answers with the first result.
    other = b if mover is a else a
    moved = await api.client.post(f"/api/matches/{match_id}/pass", json={}, headers=other.auth)
    assert moved.status_code == 200, moved.text
    rows = await events_rows(database_url, match_id)
    late = await api.client.post(url, json=body, headers=key)
    assert late.status_code == 200, late.text
    assert late.json() == first.json()
    assert await events_rows(database_url, match_id) == rows

    # A new app (a restart): the key lives in the database, not in memory.
    async with AsyncTestClient(create_app(settings)) as fresh:
        after_restart = await fresh.post(url, json=body, headers=key)
    assert after_restart.status_code == 200, after_restart.text
    assert after_restart.json() == first.json()
    assert await events_rows(database_url, match_id) == rows


async def test_simultaneous_retries_of_one_key_append_once(api: Api, database_url: str) -> None:
    match_id, a, b = await api.new_match()
    mover, body = await _play_first_card(api, match_id, (a, b))
    before = len(await events_rows(database_url, match_id))
    headers = {"Idempotency-Key": "same-key", **mover.auth}
    responses = await asyncio.gather(
        *(
            api.client.post(f"/api/matches/{match_id}/play", json=body, headers=headers)
            for _ in range(8)
        )
    )
    assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
    assert len({r.content for r in responses}) == 1
    rows = await _assert_log_is_whole(database_url, match_id)
    assert len(rows) == responses[0].json()["version"] > before
