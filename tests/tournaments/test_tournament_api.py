"""The organiser API: whole tournaments through the real app, every refusal a
problem+json that leaves the log as it was, live standings over SSE and WebSocket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from harness import serve_in_process
from tournament_harness import TournamentApi
from websockets.asyncio.client import connect

from service.settings import Settings

pytestmark = pytest.mark.anyio


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code and body["status"] == status and body["detail"], body
    return body


async def _swiss(
    api: TournamentApi, players: int, **extra: Any
) -> tuple[Any, dict[str, Any], list[Any]]:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser, "duel")
    accounts = [await api.register() for _ in range(players)]
    t = await api.create(organiser, ladder, {"type": "swiss", "rounds": 3}, **extra)
    for account in accounts:
        await api.enter(t["id"], account)
    return organiser, t, accounts


async def finished_swiss(api: TournamentApi) -> tuple[Any, dict[str, Any], list[Any]]:
    """A Swiss of five, three rounds, played to its end through the API."""
    organiser, t, players = await _swiss(api, 5)
    accounts = {p.id: p for p in players}
    await api.start(t["id"], organiser)
    for _ in range(3):
        await api.play_round(t["id"], accounts)

    async def finished() -> bool:
        return (await api.read(t["id"]))["phase"] == "finished"

    await api.wait_for(finished)
    return organiser, t, players


async def test_a_swiss_of_five_runs_itself_to_the_end(api: TournamentApi) -> None:
    _, t, players = await finished_swiss(api)
    standings = await api.read(t["id"], "standings")
    # 3 rounds of 2 games (1 point each) and a bye a round worth 1 point
    assert sum(r["points"] for r in standings["rows"]) == 3 * 2 + 3
    assert standings["labels"] == ["BH-C1", "BH", "SB"]
    assert [r["place"] for r in standings["rows"]] == [1, 2, 3, 4, 5]
    rounds = (await api.read(t["id"], "rounds"))["rounds"]
    assert [len(r["games"]) for r in rounds] == [2, 2, 2]
    assert all(len(r["byes"]) == 1 for r in rounds)
    cross = await api.read(t["id"], "crosstable")
    assert all(len(row["cells"]) == 3 for row in cross["rows"])
    log = await api.read(t["id"], "log")
    assert log["chain_ok"] and log["entries"][0]["type"] == "tournament_created"
    # the matches were played on the tournament's ladder
    match = await api.view(rounds[0]["games"][0]["match_id"], players[0])
    assert match["result"] is not None


async def _version(api: TournamentApi, tournament_id: str) -> int:
    return int((await api.read(tournament_id))["version"])


async def test_joining_a_started_round_robin_is_refused_and_changes_nothing(
    api: TournamentApi,
) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser)
    t = await api.create(organiser, ladder, {"type": "round_robin"})
    for _ in range(3):
        await api.enter(t["id"], await api.register())
    await api.start(t["id"], organiser)
    before = await _version(api, t["id"])
    late = await api.register()
    response = await api.post(f"/api/tournaments/{t['id']}/players", late)
    body = assert_problem(response, 422, "tournament_started")
    assert "round-robin" in body["detail"]
    assert await _version(api, t["id"]) == before


async def test_pairing_a_closed_round_is_refused(api: TournamentApi) -> None:
    organiser, t, players = await _swiss(api, 2, auto_pair=False)
    await api.start(t["id"], organiser)
    response = await api.post(f"/api/tournaments/{t['id']}/rounds", organiser, {"round": 1})
    assert response.status_code == 200, response.text
    game = response.json()["rounds"][0]["games"][0]
    await api.play_round(t["id"], {p.id: p for p in players})
    before = await _version(api, t["id"])
    again = await api.post(f"/api/tournaments/{t['id']}/rounds", organiser, {"round": 1})
    assert_problem(again, 422, "round_closed")
    assert await _version(api, t["id"]) == before
    assert game["round"] == 1


async def test_an_unknown_tiebreak_is_refused_and_no_tournament_is_made(
    api: TournamentApi,
) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser)
    response = await api.post(
        "/api/tournaments",
        organiser,
        {
            "name": "cup",
            "ladder_id": ladder,
            "format": {"type": "swiss", "rounds": 3},
            "tiebreaks": ["buchholz", "median"],
        },
    )
    body = assert_problem(response, 422, "unknown_tiebreak")
    assert "'median'" in body["detail"] and "sonneborn_berger" in body["detail"]
    assert (await api.client.get("/api/tournaments")).json() == []


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            {"name": "x", "ladder_id": "?", "format": {"type": "swiss", "rounds": 3}},
            404,
            "not_found",
        ),
        ({"name": "x", "format": {"type": "swiss", "rounds": 3}}, 400, "validation_error"),
        ({"name": "x", "ladder_id": "L", "format": {"type": "knockout"}}, 400, "validation_error"),
        (
            {"name": "x", "ladder_id": "L", "format": {"type": "swiss", "rounds": 3, "x": 1}},
            400,
            "validation_error",
        ),
        (
            {"name": "x", "ladder_id": "L", "format": {"type": "swiss", "rounds": 0}},
            422,
            "bad_rounds",
        ),
        (
            {
                "name": "x",
                "ladder_id": "L",
                "format": {"type": "swiss", "rounds": 3, "bye_points": 2},
            },
            422,
            "bad_bye_points",
        ),
        (
            {"name": "x", "ladder_id": "L", "format": {"type": "round_robin", "cycles": 3}},
            422,
            "bad_cycles",
        ),
    ],
)
async def test_a_bad_tournament_is_refused_with_what_is_wrong(
    api: TournamentApi, body: dict[str, Any], status: int, code: str
) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser)
    if body.get("ladder_id") == "L":
        body = {**body, "ladder_id": ladder}
    assert_problem(await api.post("/api/tournaments", organiser, body), status, code)


async def test_only_the_organiser_starts_and_nobody_acts_on_an_unknown_tournament(
    api: TournamentApi,
) -> None:
    _, t, players = await _swiss(api, 3)
    assert_problem(
        await api.post(f"/api/tournaments/{t['id']}/start", players[0]), 403, "forbidden"
    )
    assert_problem(await api.post("/api/tournaments", players[0], {}), 403, "forbidden")
    assert_problem(await api.post("/api/tournaments/nope/players", players[0]), 404, "not_found")
    assert_problem(await api.client.get("/api/tournaments/nope/standings"), 404, "not_found")
    assert_problem(await api.client.get(f"/api/tournaments/{t['id']}/rounds/1"), 404, "not_found")
    # a player withdraws themself; withdrawing someone else is the organiser's
    response = await api.client.delete(
        f"/api/tournaments/{t['id']}/players/{players[1].id}", headers=players[0].auth
    )
    assert_problem(response, 403, "forbidden")
    response = await api.client.delete(
        f"/api/tournaments/{t['id']}/players/{players[0].id}", headers=players[0].auth
    )
    assert response.status_code == 200 and response.json()["players"] == 2
    again = await api.client.delete(
        f"/api/tournaments/{t['id']}/players/{players[0].id}", headers=players[0].auth
    )
    assert_problem(again, 422, "already_withdrawn")


async def test_live_standings_reach_sse_and_websocket_watchers(settings: Settings) -> None:
    async with (
        serve_in_process(settings) as address,
        httpx.AsyncClient(base_url=f"http://{address}", timeout=20) as client,
    ):
        api = TournamentApi(client)
        _, t, _ = await _swiss(api, 2)
        sse: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        ws: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        async def read_sse() -> None:
            async with (
                httpx.AsyncClient(timeout=None) as c,
                c.stream(
                    "GET", f"http://{address}/api/tournaments/{t['id']}/standings/stream"
                ) as response,
            ):
                assert response.headers["content-type"].startswith("text/event-stream")
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        await sse.put(json.loads(line[5:]))

        async def read_ws() -> None:
            async with connect(f"ws://{address}/api/tournaments/{t['id']}/ws") as socket:
                async for message in socket:
                    await ws.put(json.loads(message)["standings"])

        readers = [asyncio.create_task(read_sse()), asyncio.create_task(read_ws())]
        try:
            first = [await asyncio.wait_for(q.get(), 20) for q in (sse, ws)]
            assert [len(f["rows"]) for f in first] == [2, 2]
            late = await api.register()
            await api.enter(t["id"], late)  # a new version: both hear of it at once
            second = [await asyncio.wait_for(q.get(), 20) for q in (sse, ws)]
            assert [len(s["rows"]) for s in second] == [3, 3]
            assert second[0]["version"] == second[1]["version"] > first[0]["version"]
        finally:
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
