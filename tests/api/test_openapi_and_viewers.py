"""The OpenAPI document, and who sees what of a match (RULES §8)."""

from __future__ import annotations

import random

import httpx
import pytest
from api_harness import Api, play_out
from harness import serve_in_process

from service.app import MAX_BODY_BYTES
from service.settings import Settings

pytestmark = pytest.mark.anyio

OUR_OPERATIONS = {
    "registerPlayer", "getMe", "setPlayerRoles", "createLadder", "listLadders", "getLadder",
    "joinLadder", "listLadderMembers", "pairPlayers", "challengePlayer", "listChallenges",
    "acceptChallenge", "declineChallenge", "joinQueue", "leaveQueue", "listQueue", "playCard",
    "pass", "keepCards", "resign", "getMatch", "getMatchEvents", "listMatches",
}  # fmt: skip


async def test_the_openapi_document_names_every_operation(api: Api) -> None:
    response = await api.client.get("/schema/openapi.json")
    assert response.status_code == 200
    document = response.json()
    operations = [
        op for path in document["paths"].values() for op in path.values() if isinstance(op, dict)
    ]
    ids = {op.get("operationId") for op in operations}
    assert ids >= OUR_OPERATIONS
    assert (await api.client.get("/schema/swagger")).status_code == 200


async def test_every_operation_documents_its_refusals_as_problem_json(api: Api) -> None:
    document = (await api.client.get("/schema/openapi.json")).json()
    problem = document["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "code", "detail"} <= set(problem["required"])
    for path, item in document["paths"].items():
        for method, op in item.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            for status in ("400", "401", "403", "404", "409", "422"):
                content = op["responses"][status]["content"]
                assert list(content) == ["application/problem+json"], (method, path, status)
    for path in ("/api/lobby/stream", "/api/matches/{match_id}/stream"):
        assert list(document["paths"][path]["get"]["responses"]["200"]["content"]) == [
            "text/event-stream"
        ]
    # And a real refusal is what the document says it is.
    match_id, _, b = await api.new_match("duel")
    wrong_seat = await api.client.post(
        f"/api/matches/{match_id}/pass", json={}, headers={**b.auth, "If-Match": "1"}
    )
    assert wrong_seat.status_code in (409, 422)
    assert wrong_seat.headers["content-type"].startswith("application/problem+json")
    assert set(wrong_seat.json()) <= set(problem["properties"])


async def test_viewpoints_during_and_after_a_match(api: Api) -> None:
    match_id, a, b = await api.new_match("duel")
    outsider = await api.register()
    live = {
        "seat 0": await api.view(match_id, a),
        "admin": await api.view(match_id, api.admin),
        "outsider": await api.view(match_id, outsider),
        "anonymous": await api.view(match_id, None),
    }
    assert live["seat 0"]["viewer"] == 0
    assert live["seat 0"]["seats"][0]["hand"] is not None
    for who in ("admin", "outsider", "anonymous"):
        assert live[who]["viewer"] == "spectator", who
        assert [s["hand"] for s in live[who]["seats"]] == [None, None], who
        assert live[who]["seed"] is None

    await play_out(api, match_id, (a, b), random.Random(5))
    assert (await api.view(match_id, api.admin))["viewer"] == "omniscient"
    replay = await api.view(match_id, outsider)
    assert replay["viewer"] == "spectator"
    assert replay["seed"] is not None and replay["set_aside"] is not None


async def test_a_ladder_may_keep_hands_hidden_in_replays(api: Api) -> None:
    match_id, a, b = await api.new_match("duel", hide_hands_in_replay=True)
    await play_out(api, match_id, (a, b), random.Random(6))
    outsider = await api.register()
    replay = await api.view(match_id, outsider)
    assert replay["set_aside"] is None
    # The seed would re-deal every hand: it stays with the administrators too.
    assert replay["seed"] is None
    log = (await api.client.get(f"/api/matches/{match_id}/events")).json()
    dealt = [e["event"] for e in log if e["event"]["type"] == "hand_dealt"]
    assert dealt and all(d["hands"] == [None, None] for d in dealt)
    ended = [e["event"] for e in log if e["event"]["type"] == "match_ended"]
    assert ended and ended[0]["seed"] is None
    admin = await api.view(match_id, api.admin)
    assert admin["set_aside"] is not None and admin["seed"] is not None


async def test_a_spectator_delay_hides_the_latest_moves_from_spectators(api: Api) -> None:
    match_id, a, b = await api.new_match("duel", spectator_delay_s=3600)
    view = await api.view(match_id, a)
    mover = (a, b)[view["to_move"]]
    moved = await api.client.post(f"/api/matches/{match_id}/pass", json={}, headers=mover.auth)
    assert moved.status_code == 200
    assert (await api.view(match_id, a))["version"] == 3
    spectator = await api.view(match_id, None)
    assert spectator["version"] == 1, "only match_created is older than the delay"
    log = (await api.client.get(f"/api/matches/{match_id}/events")).json()
    assert [e["version"] for e in log] == [1]


async def test_an_oversized_body_is_refused_before_it_is_read(settings: Settings) -> None:
    # Through a real server: the in-process test client can hang at shutdown when an
    # app stops reading a body it is still sending.
    huge = b'{"events": [' + b'"x",' * (MAX_BODY_BYTES // 4) + b'"x"]}'
    async with (
        serve_in_process(settings) as base,
        httpx.AsyncClient(base_url=f"http://{base}", timeout=30) as client,
    ):
        response = await client.post(
            "/api/records/check", content=huge, headers={"content-type": "application/json"}
        )
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (response.json()["status"], response.json()["code"]) == (413, "payload_too_large")
