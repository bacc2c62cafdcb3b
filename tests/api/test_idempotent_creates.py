"""Every create is safe to resend: a match, a ladder, a challenge sent again with
the same Idempotency-Key gets the first answer and creates nothing new; the same
key with another request is a 409 that changes nothing."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from api_harness import Account, Api, assert_problem

pytestmark = pytest.mark.anyio


def _count(url: str, sql: str, *params: object) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(sql, params).fetchone()[0])


def _matches_of(url: str, ladder_id: str) -> int:
    return _count(
        url,
        "SELECT count(*) FROM events WHERE type = 'match_created' AND data ->> 'ladder_id' = %s",
        ladder_id,
    )


async def _ladder(api: Api) -> tuple[str, Account, Account, Account, Account]:
    organiser = await api.organiser()
    a, b, c = await api.register(), await api.register(), await api.register()
    return await api.ladder(organiser, "duel", members=(a, b, c)), organiser, a, b, c


async def test_a_match_created_again_with_the_same_key_is_the_same_match(
    api: Api, database_url: str
) -> None:
    ladder_id, organiser, a, b, c = await _ladder(api)
    key = {"Idempotency-Key": f"pair-{uuid.uuid4()}", **organiser.auth}
    body = {"players": [a.id, b.id]}
    first = await api.client.post(f"/api/ladders/{ladder_id}/matches", json=body, headers=key)
    assert first.status_code == 201, first.text
    match_id = first.json()["match_id"]
    before = (await api.view(match_id, a))["version"]

    again = await api.client.post(f"/api/ladders/{ladder_id}/matches", json=body, headers=key)
    assert again.status_code == 201, again.text
    assert again.json() == first.json()  # the first answer
    assert _matches_of(database_url, ladder_id) == 1  # and nothing new
    assert (await api.view(match_id, a))["version"] == before

    # Resends racing each other: still one match, and each gets the first answer.
    racing = {"Idempotency-Key": f"race-{uuid.uuid4()}", **organiser.auth}
    answers = await asyncio.gather(
        *(
            api.client.post(
                f"/api/ladders/{ladder_id}/matches", json={"players": [b.id, c.id]}, headers=racing
            )
            for _ in range(4)
        )
    )
    assert {r.status_code for r in answers} == {201}
    assert len({r.json()["match_id"] for r in answers}) == 1
    assert _matches_of(database_url, ladder_id) == 2

    # The same key for another pairing: refused, and the log is unchanged.
    other = await api.client.post(
        f"/api/ladders/{ladder_id}/matches", json={"players": [a.id, c.id]}, headers=key
    )
    assert_problem(other, 409, "idempotency_key_reused")
    assert _matches_of(database_url, ladder_id) == 2

    # Another organiser's key of the same text is another key.
    second_organiser = await api.organiser()
    theirs = await api.client.post(
        f"/api/ladders/{ladder_id}/matches",
        json=body,
        headers={**second_organiser.auth, "Idempotency-Key": key["Idempotency-Key"]},
    )
    assert theirs.status_code == 201 and theirs.json()["match_id"] != match_id
    # Without a key every request is a new match, as before.
    for _ in range(2):
        plain = await api.client.post(
            f"/api/ladders/{ladder_id}/matches", json=body, headers=organiser.auth
        )
        assert plain.status_code == 201
    assert _matches_of(database_url, ladder_id) == 5


async def test_a_ladder_created_again_with_the_same_key_is_the_same_ladder(
    api: Api, database_url: str
) -> None:
    organiser = await api.organiser()
    key = {"Idempotency-Key": f"ladder-{uuid.uuid4()}", **organiser.auth}
    body = {"name": f"resent-{uuid.uuid4().hex[:8]}", "ruleset": "duel"}
    first = await api.client.post("/api/ladders", json=body, headers=key)
    assert first.status_code == 201, first.text
    again = await api.client.post("/api/ladders", json=body, headers=key)
    assert again.status_code == 201  # not 409 name_taken: the first answer
    assert again.content == first.content
    assert again.headers.get("idempotent-replayed") == "true"
    assert "idempotent-replayed" not in first.headers
    assert _count(database_url, "SELECT count(*) FROM ladders WHERE name = %s", body["name"]) == 1

    other = await api.client.post("/api/ladders", json={**body, "ruleset": "standard"}, headers=key)
    assert_problem(other, 409, "idempotency_key_reused")
    # A refused create keeps no key: the same key can carry a request that succeeds later.
    taken = await api.client.post(
        "/api/ladders", json=body, headers={**organiser.auth, "Idempotency-Key": "fresh"}
    )
    assert_problem(taken, 409, "name_taken")
    renamed = await api.client.post(
        "/api/ladders",
        json={**body, "name": body["name"] + "-2"},
        headers={**organiser.auth, "Idempotency-Key": "fresh"},
    )
    assert renamed.status_code == 201


async def test_a_challenge_made_again_with_the_same_key_is_the_same_challenge(
    api: Api, database_url: str
) -> None:
    ladder_id, _, a, b, c = await _ladder(api)
    key = {"Idempotency-Key": f"challenge-{uuid.uuid4()}", **a.auth}
    first = await api.client.post(
        f"/api/ladders/{ladder_id}/challenges", json={"opponent": b.id}, headers=key
    )
    assert first.status_code == 201, first.text
    accepted = await api.client.post(f"/api/challenges/{first.json()['id']}/accept", headers=b.auth)
    assert accepted.status_code == 200
    # Sent again after the challenge moved on: the first answer, as it was then.
    again = await api.client.post(
        f"/api/ladders/{ladder_id}/challenges", json={"opponent": b.id}, headers=key
    )
    assert again.status_code == 201 and again.content == first.content
    assert again.json()["status"] == "open"
    assert _count(database_url, "SELECT count(*) FROM challenges WHERE challenger = %s", a.id) == 1
    other = await api.client.post(
        f"/api/ladders/{ladder_id}/challenges", json={"opponent": c.id}, headers=key
    )
    assert_problem(other, 409, "idempotency_key_reused")
    assert _count(database_url, "SELECT count(*) FROM challenges WHERE challenger = %s", a.id) == 1
