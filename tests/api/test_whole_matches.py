"""Two bots finish whole matches through the HTTP API only, in both rulesets."""

from __future__ import annotations

import random

import pytest
from api_harness import Api, play_out

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("ruleset", ["standard", "duel"])
@pytest.mark.parametrize("seed", [1, 2])
async def test_two_bots_finish_a_match_over_http(api: Api, ruleset: str, seed: int) -> None:
    match_id, a, b = await api.new_match(ruleset)
    final = await play_out(api, match_id, (a, b), random.Random(seed))

    assert final["phase"] == "ended"
    assert final["ruleset"]["name"] == ruleset
    assert final["seed"] is not None, "the seed is revealed once the match is over"
    result = final["result"]
    assert result["reason"] in {"qualified", "comparison", "hand_limit"}

    # The log, read back through the API, ends with the same result.
    log = (await api.client.get(f"/api/matches/{match_id}/events", headers=a.auth)).json()
    assert [e["version"] for e in log] == list(range(1, final["version"] + 1))
    assert log[0]["event"]["type"] == "match_created"
    assert log[-1]["event"]["type"] == "match_ended"
    assert log[-1]["event"]["winner"] == result["winner"]

    # The match list shows it finished, with the same winner and version.
    listed = (await api.client.get("/api/matches", params={"player": a.id})).json()
    assert [m["match_id"] for m in listed] == [match_id]
    assert listed[0]["status"] == "finished"
    assert listed[0]["winner"] == result["winner"]
    assert listed[0]["version"] == final["version"]
    assert listed[0]["tokens"][0] == final["seats"][0]["tokens"]
    assert listed[0]["tokens"][1] == final["seats"][1]["tokens"]
    live = (await api.client.get("/api/matches", params={"status": "live"})).json()
    assert match_id not in [m["match_id"] for m in live]


async def test_a_resignation_ends_the_match_for_the_opponent(api: Api) -> None:
    match_id, _a, b = await api.new_match("duel")
    response = await api.client.post(f"/api/matches/{match_id}/resign", json={}, headers=b.auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["view"]["result"] == {"winner": 0, "reason": "resigned", "annulled": False}
    assert body["version"] == body["view"]["version"]
