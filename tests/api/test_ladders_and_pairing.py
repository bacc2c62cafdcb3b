"""Accounts and roles, ladders, and the three ways to pair two members:
an organiser's pairing, a challenge, and the matchmaking queue."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from api_harness import Account, Api, assert_problem

pytestmark = pytest.mark.anyio


async def test_a_registered_player_gets_a_token_that_is_stored_hashed(
    api: Api, database_url: str
) -> None:
    account = await api.register("Rikyu")
    me = await api.client.get("/api/me", headers=account.auth)
    assert me.json() == {"id": account.id, "name": "Rikyu", "roles": ["player"]}
    assert_problem(await api.client.post("/api/players", json={"name": "Rikyu"}), 409, "name_taken")
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT token_hash FROM players WHERE id = %s", (account.id,))
        row = await cur.fetchone()
    assert row is not None
    assert account.token.encode() not in bytes(row[0])
    assert len(bytes(row[0])) == 32


async def test_roles_are_enforced(api: Api) -> None:
    player = await api.register()
    body = {"name": "spring ladder", "ruleset": "duel"}
    assert_problem(await api.client.post("/api/ladders", json=body), 401, "unauthorized")
    assert_problem(
        await api.client.post("/api/ladders", json=body, headers=player.auth), 403, "forbidden"
    )
    grant = {"roles": ["organiser"]}
    assert_problem(
        await api.client.post(
            f"/api/admin/players/{player.id}/roles", json=grant, headers=player.auth
        ),
        403,
        "forbidden",
    )
    granted = await api.client.post(
        f"/api/admin/players/{player.id}/roles", json=grant, headers=api.admin.auth
    )
    assert granted.json()["roles"] == ["player", "organiser"]
    created = await api.client.post("/api/ladders", json=body, headers=player.auth)
    assert created.status_code == 201, created.text
    ladder = created.json()
    assert ladder["ruleset"] == "duel"
    assert ladder["rating"]["initial"] == 1500
    assert (await api.client.get(f"/api/ladders/{ladder['id']}")).json() == ladder
    assert ladder["id"] in [x["id"] for x in (await api.client.get("/api/ladders")).json()]
    assert_problem(await api.client.get("/api/ladders/nope"), 404, "not_found")
    # An organiser still cannot grant roles, and an unknown player is not found.
    assert_problem(
        await api.client.post(
            f"/api/admin/players/{player.id}/roles", json={"roles": ["admin"]}, headers=player.auth
        ),
        403,
        "forbidden",
    )
    assert_problem(
        await api.client.post(
            "/api/admin/players/nobody/roles", json=grant, headers=api.admin.auth
        ),
        404,
        "not_found",
    )
    # An admin cannot demote themselves (that could leave the service with no admin)...
    me = (await api.client.get("/api/me", headers=api.admin.auth)).json()
    assert_problem(
        await api.client.post(
            f"/api/admin/players/{me['id']}/roles", json=grant, headers=api.admin.auth
        ),
        409,
        "own_admin_role",
    )
    assert "admin" in (await api.client.get("/api/me", headers=api.admin.auth)).json()["roles"]
    # ...while another admin can.
    await api.client.post(
        f"/api/admin/players/{player.id}/roles", json={"roles": ["admin"]}, headers=api.admin.auth
    )
    demoted = await api.client.post(
        f"/api/admin/players/{me['id']}/roles", json=grant, headers=player.auth
    )
    assert demoted.status_code == 200, demoted.text
    assert demoted.json()["roles"] == ["player", "organiser"]


async def test_a_bad_ladder_is_a_validation_error(api: Api) -> None:
    organiser = await api.organiser()
    response = await api.client.post(
        "/api/ladders", json={"name": "x", "ruleset": "blitz"}, headers=organiser.auth
    )
    body = assert_problem(response, 400, "validation_error")
    assert "ruleset" in body["detail"]


async def test_an_organiser_pairs_two_members(api: Api) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser, "duel")
    a, b, outsider = await api.register(), await api.register(), await api.register()
    await api.join(ladder, a)
    await api.join(ladder, b)
    await api.join(ladder, a)  # joining twice is harmless
    members = (await api.client.get(f"/api/ladders/{ladder}/members")).json()
    assert sorted(m["player_id"] for m in members) == sorted([a.id, b.id])

    url = f"/api/ladders/{ladder}/matches"
    assert_problem(
        await api.client.post(url, json={"players": [a.id, b.id]}, headers=a.auth), 403, "forbidden"
    )
    assert_problem(
        await api.client.post(url, json={"players": [a.id, outsider.id]}, headers=organiser.auth),
        400,
        "not_a_member",
    )
    match_id = await api.pair(ladder, organiser, a, b)
    view = await api.view(match_id, a)
    assert [s["player"] for s in view["seats"]] == [a.id, b.id]
    assert view["ruleset"]["name"] == "duel"
    listed = (await api.client.get("/api/matches", params={"ladder": ladder})).json()
    assert [(m["match_id"], m["status"]) for m in listed] == [(match_id, "live")]


async def test_a_challenge_is_accepted_or_declined_once_by_the_opponent(api: Api) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser)
    a, b, c = await api.register(), await api.register(), await api.register()
    for account in (a, b, c):
        await api.join(ladder, account)

    async def challenge(by: Account, opponent: Account) -> dict[str, Any]:
        response = await api.client.post(
            f"/api/ladders/{ladder}/challenges", json={"opponent": opponent.id}, headers=by.auth
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    first = await challenge(a, b)
    assert first["status"] == "open" and first["match_id"] is None
    received = (await api.client.get("/api/challenges", headers=b.auth)).json()
    assert [x["id"] for x in received] == [first["id"]]
    assert (await api.client.get("/api/challenges", headers=c.auth)).json() == []

    decline = f"/api/challenges/{first['id']}/decline"
    assert_problem(await api.client.post(decline, headers=a.auth), 403, "forbidden")
    assert_problem(await api.client.post(decline, headers=c.auth), 403, "forbidden")
    declined = await api.client.post(decline, headers=b.auth)
    assert declined.json()["status"] == "declined"
    assert_problem(
        await api.client.post(f"/api/challenges/{first['id']}/accept", headers=b.auth),
        409,
        "challenge_closed",
    )

    second = await challenge(b, c)
    accepts = await asyncio.gather(
        *(
            api.client.post(f"/api/challenges/{second['id']}/accept", headers=c.auth)
            for _ in range(4)
        )
    )
    assert sorted(r.status_code for r in accepts) == [200, 409, 409, 409]
    accepted = next(r for r in accepts if r.status_code == 200).json()
    assert accepted["status"] == "accepted"
    view = await api.view(accepted["match_id"], c)
    assert [s["player"] for s in view["seats"]] == [b.id, c.id]
    assert len((await api.client.get("/api/matches", params={"ladder": ladder})).json()) == 1

    assert_problem(
        await api.client.post(
            f"/api/ladders/{ladder}/challenges", json={"opponent": a.id}, headers=a.auth
        ),
        400,
        "validation_error",
    )
    assert_problem(
        await api.client.post("/api/challenges/nope/accept", headers=a.auth), 404, "not_found"
    )


async def _set_rating(url: str, ladder: str, player: Account, rating: float) -> None:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute(
            "INSERT INTO ratings (ladder_id, player_id, rating, games, wins, draws, losses, peak,"
            " reached_master, provisional) VALUES (%s, %s, %s, 0, 0, 0, 0, %s, false, true)",
            (ladder, player.id, rating, rating),
        )


async def test_the_queue_pairs_the_nearest_rating(api: Api, database_url: str) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser)  # max_difference 400
    players = {name: await api.register(name) for name in ("low", "high", "near_high", "near_low")}
    for name, rating in (("low", 1500), ("high", 2000), ("near_high", 1900), ("near_low", 1450)):
        await api.join(ladder, players[name])
        await _set_rating(database_url, ladder, players[name], rating)

    async def queue(name: str) -> dict[str, Any]:
        response = await api.client.post(f"/api/ladders/{ladder}/queue", headers=players[name].auth)
        assert response.status_code == 200, response.text
        return dict(response.json())

    assert (await queue("low"))["status"] == "waiting"
    assert (await queue("high"))["status"] == "waiting", "500 apart: more than max_difference"
    waiting = (await api.client.get(f"/api/ladders/{ladder}/queue")).json()
    assert [w["player_id"] for w in waiting] == [players["low"].id, players["high"].id]
    assert [w["rating"] for w in waiting] == [1500, 2000]

    paired = await queue("near_high")
    assert paired["status"] == "matched"
    assert paired["opponent"] == players["high"].id
    assert paired["match"]["players"] == [players["high"].id, players["near_high"].id]
    paired = await queue("near_low")
    assert paired["opponent"] == players["low"].id
    assert (await api.client.get(f"/api/ladders/{ladder}/queue")).json() == []

    # Leaving the queue; a non-member may not queue.
    assert (await queue("low"))["status"] == "waiting"
    left = await api.client.delete(f"/api/ladders/{ladder}/queue", headers=players["low"].auth)
    assert left.status_code == 204
    assert (await api.client.get(f"/api/ladders/{ladder}/queue")).json() == []
    stranger = await api.register()
    assert_problem(
        await api.client.post(f"/api/ladders/{ladder}/queue", headers=stranger.auth),
        403,
        "forbidden",
    )


async def test_simultaneous_joins_never_pair_a_player_twice(api: Api) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser)
    players = [await api.register() for _ in range(11)]
    for player in players:
        await api.join(ladder, player)
    responses = await asyncio.gather(
        *(api.client.post(f"/api/ladders/{ladder}/queue", headers=p.auth) for p in players)
    )
    results = [r.json() for r in responses]
    matched = [r["match"] for r in results if r["status"] == "matched"]
    seated = [p for m in matched for p in m["players"]]
    assert len(seated) == len(set(seated)), "nobody plays two matches"
    assert len(matched) == 5
    waiting = (await api.client.get(f"/api/ladders/{ladder}/queue")).json()
    assert len(waiting) == 1
    assert {waiting[0]["player_id"], *seated} == {p.id for p in players}


async def test_a_challenge_names_its_own_clock_only_where_the_ladder_allows_it(api: Api) -> None:
    organiser = await api.organiser()
    a, b = await api.register(), await api.register()
    blitz = {"kind": "real_time", "base_s": 180, "increment_s": 2, "no_show_s": 30}
    daily = {"kind": "correspondence", "per_move_s": 86400, "no_show_s": 86400}
    fixed = await api.ladder(organiser, members=(a, b), clock=blitz)
    open_ = await api.ladder(organiser, members=(a, b), clock=blitz, challenge_clocks=True)

    refused = await api.client.post(
        f"/api/ladders/{fixed}/challenges", json={"opponent": b.id, "clock": daily}, headers=a.auth
    )
    assert_problem(refused, 400, "challenge_clock_not_allowed")
    assert (await api.client.get("/api/challenges", headers=b.auth)).json() == []

    async def accepted(ladder: str, body: dict[str, Any]) -> dict[str, Any]:
        made = await api.client.post(f"/api/ladders/{ladder}/challenges", json=body, headers=a.auth)
        assert made.status_code == 201, made.text
        answer = await api.client.post(
            f"/api/challenges/{made.json()['id']}/accept", headers=b.auth
        )
        assert answer.status_code in (200, 201), answer.text
        return await api.view(answer.json()["match_id"], a)

    own = await accepted(open_, {"opponent": b.id, "clock": daily})
    assert own["clocks"]["control"] == daily, "the challenge's own time control"
    assert own["clocks"]["seats"][0]["remaining_ms"] <= 86400 * 1000
    ladders = await accepted(open_, {"opponent": b.id})
    assert ladders["clocks"]["control"] == blitz, "no clock named: the ladder's"
    ladder = (await api.client.get(f"/api/ladders/{open_}")).json()
    assert ladder["challenge_clocks"] is True and ladder["clock"] == blitz
