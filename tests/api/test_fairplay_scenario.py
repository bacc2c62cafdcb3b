"""Fair play through the real API (docs/fairplay.md): two accounts trade wins by
resigning at once, a flag appears for admins only, the admin closes the
account, its victim is refunded exactly what a recompute without the voided
matches gives, and the flags projection rebuilt from the log equals the live one."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from api_harness import Account, Api, assert_problem

from schemas.fairplay import VoidMatches
from service.fairplay import ladder
from service.fairplay.service import record_decision
from service.store.ops import run, run_async
from workers.projections import FlagsProjection, RatingsProjection, Runner
from workers.projections.flags import rebuild

pytestmark = pytest.mark.anyio

THRESHOLDS = {"min_pair_games": 5, "min_early_ends": 5, "rating_from_one": 100.0}


def catch_up(database_url: str) -> None:
    """The worker's ratings and flags runners, one catch-up each (what ``matcha worker`` runs)."""
    for projection in (RatingsProjection(database_url), FlagsProjection()):
        runner = Runner(projection, database_url, stop=threading.Event(), sweep_at_start=False)
        try:
            runner.catch_up()
        finally:
            runner.close()


async def resigned(
    api: Api, ladder_id: str, organiser: Account, winner: Account, loser: Account
) -> str:
    """A ladder match the loser resigns before any card is played."""
    match_id = await api.pair(ladder_id, organiser, winner, loser)
    response = await api.post(f"/api/matches/{match_id}/resign", loser)
    assert response.status_code == 200, response.text
    return match_id


def counts(database_url: str) -> tuple[int, int]:
    with psycopg.connect(database_url) as conn:
        events = conn.execute("SELECT count(*) FROM events").fetchone()
        decisions = conn.execute("SELECT count(*) FROM fairplay_events").fetchone()
    assert events is not None and decisions is not None
    return int(events[0]), int(decisions[0])


async def rating_of(api: Api, ladder_id: str, player: Account) -> dict[str, Any]:
    response = await api.get(f"/api/ladders/{ladder_id}/players/{player.id}/ratings", None)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize("system", ["elo", "glicko2"])
async def test_given_a_fed_booster_when_the_admin_closes_it_then_its_victim_is_refunded_exactly(
    api: Api, database_url: str, system: str
) -> None:
    organiser = await api.organiser()
    booster, feeder, victim, honest = [await api.register() for _ in range(4)]
    ladder_id = await api.ladder(
        organiser, members=(booster, feeder, victim, honest), rating_system=system
    )
    response = await api.client.put(
        f"/api/ladders/{ladder_id}/fairplay", json=THRESHOLDS, headers=organiser.auth
    )
    assert response.status_code == 200, response.text
    await resigned(api, ladder_id, organiser, victim, honest)
    for _ in range(2):
        await resigned(api, ladder_id, organiser, booster, victim)
    await resigned(api, ladder_id, organiser, honest, victim)
    fed = [await resigned(api, ladder_id, organiser, booster, feeder) for _ in range(12)]
    catch_up(database_url)

    # the flag is there, for admins only
    response = await api.get("/api/admin/flags", api.admin)
    assert response.status_code == 200, response.text
    flags = response.json()
    early = next(f for f in flags if f["flag"]["signal"] == "early_ends")
    assert early["flag"]["players"] == [booster.id, feeder.id]
    assert early["flag"]["matches"] == fed
    assert early["audits"][0] == f"/api/admin/matches/{fed[0]}/audit"
    for who in (booster, feeder, victim, organiser):
        assert_problem(await api.get("/api/admin/flags", who), 403, "forbidden")
        flag_url = f"/api/admin/flags/{early['flag']['flag_id']}"
        assert_problem(await api.get(flag_url, who), 403, "forbidden")
    audit = (await api.get(f"/api/admin/matches/{fed[0]}/audit", api.admin)).json()
    assert early["flag"]["flag_id"] in [f["flag_id"] for f in audit["flags"]]

    before = await rating_of(api, ladder_id, victim)
    response = await api.post(
        f"/api/admin/flags/{early['flag']['flag_id']}/decision",
        api.admin,
        {"action": "close", "reason": "fed by resignations at move one"},
    )
    assert response.status_code == 200, response.text
    outcome = response.json()
    assert outcome["closed"] == booster.id and len(outcome["to_void"]) == 14
    catch_up(database_url)

    after = await rating_of(api, ladder_id, victim)
    (refund,) = after["refunds"]
    assert refund["reason"] == "refund: opponent closed for fair play"
    assert refund["before"] == before["rating"]
    assert refund["after"] == after["rating"]  # bit for bit: the ratings' recompute without them
    assert refund["amount"] == after["rating"] - before["rating"] > 0
    profile = (await api.get(f"/api/players/{booster.id}", None)).json()
    assert profile["closed_for_fair_play"] is True
    replay = await api.get(f"/api/matches/{fed[0]}", None)
    assert replay.status_code == 200  # the closed account's matches stay readable
    assert_problem(await api.get("/api/me", booster), 401, "unauthorized")  # it signs in no more
    assert (await api.get("/api/me", victim)).status_code == 200

    with psycopg.connect(database_url, autocommit=True) as conn:
        live = run(conn, ladder.stored(ladder_id))
        assert live == run(conn, ladder.compute(ladder_id))
        conn.execute("DELETE FROM fairplay_flags")
        conn.execute("DELETE FROM fairplay_refunds")
        rebuild(conn)
        assert run(conn, ladder.stored(ladder_id)) == live


async def test_given_hostile_decisions_when_sent_then_each_is_a_problem_and_nothing_is_appended(
    api: Api, database_url: str
) -> None:
    organiser = await api.organiser()
    a, b = await api.register(), await api.register()
    ladder_id = await api.ladder(organiser, members=(a, b))
    await api.client.put(
        f"/api/ladders/{ladder_id}/fairplay", json=THRESHOLDS, headers=organiser.auth
    )
    for _ in range(6):
        await resigned(api, ladder_id, organiser, a, b)
    catch_up(database_url)
    flag_id = (await api.get("/api/admin/flags", api.admin)).json()[0]["flag"]["flag_id"]
    url = f"/api/admin/flags/{flag_id}/decision"
    seen = counts(database_url)

    assert_problem(await api.post(url, a, {"action": "dismiss", "reason": "x"}), 403, "forbidden")
    assert_problem(
        await api.post(url, None, {"action": "dismiss", "reason": "x"}), 401, "unauthorized"
    )
    for body in (
        {"action": "dismiss", "reason": "x", "also": 1},
        {"action": "dismiss", "reason": ""},
        {"action": "dismiss", "reason": "x" * 501},
        {"action": "explode", "reason": "x"},
        {"action": "void", "reason": "x", "match_ids": []},
    ):
        assert_problem(await api.post(url, api.admin, body), 400, "validation_error")
    strange = {"action": "void", "reason": "x", "match_ids": ["m-not-the-flags"]}
    assert_problem(await api.post(url, api.admin, strange), 400, "not_the_flags_match")
    stranger = {"action": "close", "reason": "x", "player_id": organiser.id}
    assert_problem(await api.post(url, api.admin, stranger), 400, "not_flagged")
    missing = "/api/admin/flags/flag-0000/decision"
    assert_problem(
        await api.post(missing, api.admin, {"action": "dismiss", "reason": "x"}),
        404,
        "flag_not_found",
    )
    too_long = f"/api/admin/flags/{'f' * 65}"
    assert_problem(await api.get(too_long, api.admin), 400, "validation_error")
    assert_problem(
        await api.get("/api/admin/flags", api.admin, status="closed"), 400, "validation_error"
    )
    for settings in ({"min_pair_games": 2**70}, {"pair_share": 7}, {"unknown": 1}):
        response = await api.client.put(
            f"/api/ladders/{ladder_id}/fairplay", json=settings, headers=organiser.auth
        )
        assert_problem(response, 400, "validation_error")
    response = await api.client.put(
        f"/api/ladders/{ladder_id}/fairplay", json=THRESHOLDS, headers=a.auth
    )
    assert_problem(response, 403, "forbidden")
    assert counts(database_url) == seen

    dismissed = await api.post(url, api.admin, {"action": "dismiss", "reason": "friends, casual"})
    assert dismissed.status_code == 200, dismissed.text
    again = await api.post(url, api.admin, {"action": "dismiss", "reason": "twice"})
    assert_problem(again, 409, "flag_decided")
    assert (await api.get("/api/admin/flags", api.admin)).json() == [
        f
        for f in (await api.get("/api/admin/flags", api.admin, status="all")).json()
        if f["decided"] is None
    ]
    # the case grows after its dismissal: the decision keeps what the admin saw
    await resigned(api, ladder_id, organiser, a, b)
    catch_up(database_url)
    now = (await api.get(f"/api/admin/flags/{flag_id}", api.admin)).json()
    assert len(now["flag"]["matches"]) == 7
    assert now["decided"]["reason"] == "friends, casual"
    assert len(now["decided"]["seen"]["matches"]) == 6


async def test_given_a_decision_that_died_before_its_annulments_the_next_decision_completes_it(
    api: Api, database_url: str
) -> None:
    organiser = await api.organiser()
    a, b = await api.register(), await api.register()
    ladder_id = await api.ladder(organiser, members=(a, b))
    await api.client.put(
        f"/api/ladders/{ladder_id}/fairplay", json=THRESHOLDS, headers=organiser.auth
    )
    matches = [await resigned(api, ladder_id, organiser, a, b) for _ in range(6)]
    catch_up(database_url)
    flags = {
        f["flag"]["signal"]: f["flag"]["flag_id"]
        for f in (await api.get("/api/admin/flags", api.admin)).json()
    }
    # the decision commits, then its process dies: no annulment reaches the log
    async with await psycopg.AsyncConnection.connect(database_url) as conn, conn.transaction():
        await run_async(
            conn, record_decision(flags["early_ends"], "admin-1", VoidMatches(reason="fed"))
        )
    assert (await api.view(matches[0], a))["result"]["annulled"] is False

    response = await api.post(
        f"/api/admin/flags/{flags['pair_share']}/decision",
        api.admin,
        {"action": "dismiss", "reason": "seen"},
    )

    assert response.status_code == 200, response.text
    assert response.json()["ladders"] == [ladder_id]
    for match_id in matches:
        assert (await api.view(match_id, a))["result"]["annulled"] is True
    log = (await api.get(f"/api/matches/{matches[0]}/events", api.admin)).json()
    assert log[-1]["event"]["reason"] == "fair play: fed"
