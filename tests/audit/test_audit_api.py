"""Disputes, decisions, audits and the audit trail through the real HTTP app on
real PostgreSQL: who may do what, and what each action leaves in the log."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from audit_api import Account, Api, admin_token
from litestar import Litestar
from litestar.testing import AsyncTestClient

import service.app as app_module
from service.app import create_app
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def recomputes() -> list[str]:
    """Ladders whose ratings recompute was asked for (instead of RQ)."""
    return []


@pytest.fixture
async def api(
    database_url: str,
    redis_server_url: str,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    recomputes: list[str],
) -> AsyncIterator[Api]:
    token = admin_token()
    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=True),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=token, admin_name="admin"),
    )
    # Middleware plug-ins are not what these tests are about.
    monkeypatch.setattr(app_module, "PLUGINS", [])
    app: Litestar = create_app(settings)
    async with AsyncTestClient(app) as client:
        app.state.on_annulled = recomputes.append
        yield Api(client, token)


async def live_match(api: Api, **ladder: Any) -> tuple[str, str, Account, Account, Account]:
    """(ladder_id, match_id, organiser, seat 0, seat 1) of a match just started."""
    organiser = await api.with_role("organiser")
    a, b = await api.register(), await api.register()
    ladder_id = await api.ladder(organiser, members=[a, b], **ladder)
    match_id = await api.pair(ladder_id, organiser, a, b)
    return ladder_id, match_id, organiser, a, b


async def finished_match(api: Api, **ladder: Any) -> tuple[str, str, Account, Account, Account]:
    """(ladder_id, match_id, organiser, seat 0, seat 1) of a match played to its end."""
    ladder_id, match_id, organiser, a, b = await live_match(api, **ladder)
    await api.play_out(match_id, (a, b), random.Random(1))
    return ladder_id, match_id, organiser, a, b


async def stored_seed(database_url: str, match_id: str) -> str:
    """The match's secret seed, read straight from the store."""
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,))
        (seed,) = await cur.fetchone()  # type: ignore[misc]
    return str(seed)


async def test_a_player_files_a_dispute_and_sees_only_their_own(api: Api) -> None:
    _, match_id, organiser, a, b = await finished_match(api)

    filed = await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "rigged deal"})
    other = await api.post(f"/api/matches/{match_id}/disputes", b, {"reason": "lost move"})

    assert filed.status_code == 201, filed.text
    body = filed.json()
    assert (body["state"], body["player"], body["seat"]) == ("filed", a.id, 0)
    assert body["reason"] == "rigged deal"
    assert other.status_code == 201
    mine = (await api.get(f"/api/matches/{match_id}/disputes", a)).json()
    assert [d["reason"] for d in mine] == ["rigged deal"]
    theirs = (await api.get(f"/api/matches/{match_id}/disputes", b)).json()
    assert [d["reason"] for d in theirs] == ["lost move"]
    everyone = (await api.get(f"/api/matches/{match_id}/disputes", api.admin)).json()
    assert {d["reason"] for d in everyone} == {"rigged deal", "lost move"}
    assert (await api.get(f"/api/matches/{match_id}/disputes", organiser)).json() == []
    # The dispute is an event of the match's log, recorded as the player's act.
    log = (await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)).json()["events"]
    assert [(e["type"], e["actor"]) for e in log[-2:]] == [
        ("dispute_filed", a.id),
        ("dispute_filed", b.id),
    ]


async def test_who_may_dispute_and_when(api: Api) -> None:
    organiser = await api.with_role("organiser")
    a, b, c = await api.register(), await api.register(), await api.register()
    ladder_id = await api.ladder(organiser, members=[a, b], dispute_window_s=0)
    live = await api.pair(ladder_id, organiser, a, b)

    too_early = await api.post(f"/api/matches/{live}/disputes", a, {"reason": "x"})
    assert (too_early.status_code, too_early.json()["code"]) == (409, "match_not_finished")
    await api.resign(live, b)
    stranger = await api.post(f"/api/matches/{live}/disputes", c, {"reason": "x"})
    assert stranger.status_code == 403
    # A window of 0 s: closed as soon as the match ended.
    late = await api.post(f"/api/matches/{live}/disputes", a, {"reason": "x"})
    assert (late.status_code, late.json()["code"]) == (409, "dispute_window_closed")
    anonymous = await api.post(f"/api/matches/{live}/disputes", None, {"reason": "x"})
    assert anonymous.status_code == 401
    unknown = await api.post("/api/matches/nope/disputes", a, {"reason": "x"})
    assert unknown.status_code == 404


async def test_a_reason_is_required_and_a_second_open_dispute_is_refused(api: Api) -> None:
    _, match_id, _, a, _ = await finished_match(api)

    blank = await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "  "})
    assert (blank.status_code, blank.json()["code"]) == (400, "reason_required")
    assert (await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "r"})).is_success
    again = await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "r2"})
    assert (again.status_code, again.json()["code"]) == (409, "dispute_pending")


async def test_only_admins_audit_and_decide(api: Api, recomputes: list[str]) -> None:
    _, match_id, organiser, a, b = await finished_match(api)
    dispute = (await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "r"})).json()
    decision = f"/api/admin/disputes/{dispute['dispute_id']}/decision"

    for who in (a, b, organiser):
        audit = await api.get(f"/api/admin/matches/{match_id}/audit", who)
        assert audit.status_code == 403
        refused = await api.post(decision, who, {"upheld": True, "reason": "because"})
        assert refused.status_code == 403
        annul = await api.post(f"/api/admin/matches/{match_id}/annul", who, {"reason": "x"})
        assert annul.status_code == 403
    assert (await api.get(f"/api/admin/matches/{match_id}/audit", None)).status_code == 401
    no_reason = await api.post(decision, api.admin, {"upheld": True, "reason": ""})
    assert (no_reason.status_code, no_reason.json()["code"]) == (400, "reason_required")
    missing = await api.post(decision, api.admin, {"upheld": True})
    assert missing.status_code == 400
    # Nothing of the refusals reached the log.
    report = (await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)).json()
    assert [e["type"] for e in report["events"]][-1] == "dispute_filed"
    assert recomputes == []


async def test_the_audit_of_an_honest_match_is_consistent_and_shows_the_whole_log(
    api: Api,
) -> None:
    _, match_id, _, a, b = await finished_match(api)

    response = await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)

    assert response.status_code == 200, response.text
    report = response.json()
    assert report["verdict"]["consistent"] is True, report["verdict"]["line"]
    assert report["verdict"]["line"].startswith("consistent")
    assert report["players"] == [a.id, b.id]
    assert report["status"] == "finished"
    assert {c: report[c]["status"] for c in ("chain", "refold", "fairness", "admin")} == {
        "chain": "consistent",
        "refold": "consistent",
        "fairness": "consistent",
        "admin": "consistent",
    }
    events = report["events"]
    assert [e["version"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["actor"] and e["recorded_at"] and e["hash_ok"] for e in events)
    # Omniscient: every deal's hands are there in full.
    deal = next(e for e in events if e["type"] == "hand_dealt")
    assert all(len(h) == 5 for h in deal["data"]["hands"])
    moves = report["timing"]["moves"]
    assert moves and all(m["seconds"] >= 0 for m in moves)
    assert report["timing"]["disconnections"] == "not recorded"


async def test_a_live_match_audit_never_shows_the_seed(api: Api, database_url: str) -> None:
    _, match_id, _, _, _ = await live_match(api)
    seed = await stored_seed(database_url, match_id)

    response = await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)

    assert response.status_code == 200
    assert seed not in response.text
    report = response.json()
    assert report["status"] == "live"
    assert report["refold"]["seed_source"] == "stored"
    assert report["verdict"]["consistent"] is True


async def test_a_rejected_dispute_changes_nothing_but_the_log(
    api: Api, recomputes: list[str]
) -> None:
    _, match_id, _, a, _ = await finished_match(api)
    before = await api.view(match_id, a)
    dispute = (await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "r"})).json()

    decided = await api.post(
        f"/api/admin/disputes/{dispute['dispute_id']}/decision",
        api.admin,
        {"upheld": False, "reason": "the log is consistent"},
    )

    assert decided.status_code == 200, decided.text
    body = decided.json()
    assert (body["state"], body["decision_reason"]) == ("rejected", "the log is consistent")
    assert body["decided_by"] == await api.admin_id()
    after = await api.view(match_id, a)
    assert after["result"] == before["result"]
    assert recomputes == []
    mine = (await api.get(f"/api/matches/{match_id}/disputes", a)).json()
    assert [d["state"] for d in mine] == ["rejected"]
    twice = await api.post(
        f"/api/admin/disputes/{dispute['dispute_id']}/decision",
        api.admin,
        {"upheld": True, "reason": "changed my mind"},
    )
    assert (twice.status_code, twice.json()["code"]) == (409, "dispute_decided")


async def test_an_upheld_dispute_annuls_the_match_by_appending_events(
    api: Api, recomputes: list[str]
) -> None:
    ladder_id, match_id, _, a, _ = await finished_match(api)
    dispute = (await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "r"})).json()
    before = (await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)).json()["events"]

    decided = await api.post(
        f"/api/admin/disputes/{dispute['dispute_id']}/decision",
        api.admin,
        {"upheld": True, "reason": "the server lost a move"},
    )

    assert decided.status_code == 200, decided.text
    assert decided.json()["state"] == "upheld"
    report = (await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)).json()
    admin_id = await api.admin_id()
    # Nothing edited: the old rows are as they were, two rows were added.
    assert report["events"][: len(before)] == before
    added = report["events"][len(before) :]
    assert [(e["type"], e["actor"]) for e in added] == [
        ("dispute_decided", admin_id),
        ("match_annulled", admin_id),
    ]
    assert added[1]["data"]["dispute_id"] == dispute["dispute_id"]
    assert report["status"] == "annulled"
    assert report["verdict"]["consistent"] is True, report["verdict"]["line"]
    assert recomputes == [ladder_id]
    view = await api.view(match_id, a)
    assert view["phase"] == "ended"


async def test_annul_without_a_dispute_and_the_audit_trail(api: Api) -> None:
    ladder_one, m1, organiser, a, _ = await finished_match(api)
    ladder_two, m2, _, c, _ = await finished_match(api)
    dispute = (await api.post(f"/api/matches/{m1}/disputes", a, {"reason": "r"})).json()
    await api.post(
        f"/api/admin/disputes/{dispute['dispute_id']}/decision",
        api.admin,
        {"upheld": False, "reason": "no"},
    )
    annulled = await api.post(f"/api/admin/matches/{m2}/annul", api.admin, {"reason": "fraud"})
    assert annulled.status_code == 200, annulled.text
    again = await api.post(f"/api/admin/matches/{m2}/annul", api.admin, {"reason": "again"})
    assert again.status_code == 409
    assert (await api.post(f"/api/admin/matches/{m2}/annul", api.admin, {})).status_code == 400

    every = await api.get("/api/admin/actions", organiser)
    assert every.status_code == 200, every.text
    actions = every.json()
    assert [(x["kind"], x["match_id"], x["ladder_id"]) for x in actions] == [
        ("dispute_decided", m1, ladder_one),
        ("match_annulled", m2, ladder_two),
    ]
    assert actions[0]["upheld"] is False and actions[0]["reason"] == "no"
    assert actions[1]["reason"] == "fraud"
    assert [x.get("admin_name") for x in actions] == ["admin", "admin"], actions
    only_two = (await api.get("/api/admin/actions", organiser, ladder=ladder_two)).json()
    assert [x["match_id"] for x in only_two] == [m2]
    kind = (await api.get("/api/admin/actions", api.admin, kind="match_annulled")).json()
    assert [x["match_id"] for x in kind] == [m2]
    by_admin = (await api.get("/api/admin/actions", api.admin, admin="admin")).json()
    assert len(by_admin) == 2
    assert (await api.get("/api/admin/actions", api.admin, admin="nobody")).json() == []
    after = (
        await api.get("/api/admin/actions", api.admin, after=str(actions[0]["position"]))
    ).json()
    assert [x["match_id"] for x in after] == [m2]
    since = (await api.get("/api/admin/actions", api.admin, after=actions[0]["recorded_at"])).json()
    assert [x["match_id"] for x in since] == [m2]
    bad = await api.get("/api/admin/actions", api.admin, kind="edited")
    assert bad.status_code == 400
    assert (await api.get("/api/admin/actions", a)).status_code == 403
    assert (await api.get("/api/admin/actions", c)).status_code == 403


def rate(url: str, ladder_id: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Run the workers' ratings job for the ladder now; its table and its history."""
    from workers.ratings import apply_ladder

    with psycopg.connect(url, autocommit=True) as conn:
        apply_ladder(conn, ladder_id)
        table = conn.execute(
            "SELECT player_id, rating, games, wins, draws, losses FROM ratings"
            " WHERE ladder_id = %s ORDER BY player_id",
            (ladder_id,),
        ).fetchall()
        history = conn.execute(
            "SELECT player_id, opponent_id, score, before, after FROM rating_history"
            " WHERE ladder_id = %s ORDER BY position, player_id",
            (ladder_id,),
        ).fetchall()
    return table, history


async def test_an_upheld_dispute_rates_the_ladder_as_if_the_match_had_never_been_played(
    api: Api, recomputes: list[str], database_url: str
) -> None:
    organiser = await api.with_role("organiser")
    a, b, c = await api.register(), await api.register(), await api.register()
    season = await api.ladder(organiser, members=[a, b, c])
    control = await api.ladder(organiser, members=[a, b, c])
    # (seat 0, seat 1, loser); the contested match is played out by the bots.
    schedule = [(a, b, b), (b, c, None), (a, c, a), (b, a, a), (c, b, b), (a, c, c)]
    contested = ""
    for i, (p0, p1, loser) in enumerate(schedule):
        match_id = await api.pair(season, organiser, p0, p1)
        if loser is None:
            await api.play_out(match_id, (p0, p1), random.Random(5))
            contested = match_id
        else:
            await api.resign(match_id, loser)
            # The control ladder: the same season without the contested match.
            again = await api.pair(control, organiser, p0, p1)
            await api.resign(again, loser)
        if i == 0:
            first = match_id
    before, history_before = rate(database_url, season)
    expected, expected_history = rate(database_url, control)
    assert before != expected  # the contested match counts until the dispute is upheld

    # A rejected dispute changes nothing.
    rejected = (await api.post(f"/api/matches/{first}/disputes", b, {"reason": "r"})).json()
    await api.post(
        f"/api/admin/disputes/{rejected['dispute_id']}/decision",
        api.admin,
        {"upheld": False, "reason": "fair"},
    )
    assert recomputes == []
    assert rate(database_url, season) == (before, history_before)

    dispute = (await api.post(f"/api/matches/{contested}/disputes", b, {"reason": "r"})).json()
    decided = await api.post(
        f"/api/admin/disputes/{dispute['dispute_id']}/decision",
        api.admin,
        {"upheld": True, "reason": "rigged"},
    )
    assert decided.status_code == 200, decided.text
    assert recomputes == [season]

    after, history_after = rate(database_url, season)
    assert after == expected
    assert history_after == expected_history
    # Every rating after the contested match moved: the history is another one.
    assert history_after != history_before[:2] + history_before[4:]


async def test_an_upheld_dispute_queues_the_ladder_recompute_on_rq(
    api: Api, redis_server_url: str, redis_prefix: str
) -> None:
    from redis import Redis
    from rq import Queue

    from service.api.admin import _enqueue_ladder_update

    app = api.client.app
    app.state.on_annulled = _enqueue_ladder_update(app)  # the real one
    ladder_id, match_id, _, a, _ = await finished_match(api)
    ratings = Queue(f"{redis_prefix}-ratings", connection=Redis.from_url(redis_server_url))
    queued_before = {j.id for j in ratings.jobs}
    dispute = (await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "r"})).json()

    await api.post(
        f"/api/admin/disputes/{dispute['dispute_id']}/decision",
        api.admin,
        {"upheld": True, "reason": "rigged"},
    )

    new = [j for j in ratings.jobs if j.id not in queued_before]
    # (The workers' own after-commit hook, where registered, may queue it too.)
    assert new
    assert {(j.func_name, j.args) for j in new} == {("workers.ratings.update_ladder", (ladder_id,))}


async def test_a_live_match_annulled_takes_no_more_moves_and_its_seed_stays_secret(
    api: Api, database_url: str, recomputes: list[str]
) -> None:
    ladder_id, match_id, _, a, b = await live_match(api)
    seed = await stored_seed(database_url, match_id)

    annulled = await api.post(
        f"/api/admin/matches/{match_id}/annul", api.admin, {"reason": "players colluded"}
    )

    assert annulled.status_code == 200, annulled.text
    assert annulled.json() == {"match_id": match_id, "version": 3}
    assert recomputes == [ladder_id]
    dealer = (await api.view(match_id, a))["dealer"]  # the seat whose turn it was
    refused = await api.post(f"/api/matches/{match_id}/pass", a if dealer == 0 else b)
    assert (refused.status_code, refused.json()["code"]) == (422, "match_annulled")
    dispute = await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "x"})
    assert (dispute.status_code, dispute.json()["code"]) == (409, "match_annulled")
    audit = await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)
    report = audit.json()
    assert report["status"] == "annulled"
    assert report["verdict"]["consistent"] is True, report["verdict"]["line"]
    assert seed not in audit.text


async def test_the_public_match_log_shows_a_dispute_only_to_its_player(api: Api) -> None:
    _, match_id, _, a, b = await finished_match(api)
    await api.post(f"/api/matches/{match_id}/disputes", b, {"reason": "only-for-admins-eyes"})

    own = await api.get(f"/api/matches/{match_id}/events", b)
    other = await api.get(f"/api/matches/{match_id}/events", a)
    spectator = await api.get(f"/api/matches/{match_id}/events", None)

    assert "only-for-admins-eyes" in own.text
    assert "only-for-admins-eyes" not in other.text
    assert "only-for-admins-eyes" not in spectator.text


async def test_the_exported_record_withholds_disputes_from_all_but_admins(api: Api) -> None:
    _, match_id, _, a, b = await finished_match(api)
    whole = await api.get(f"/api/matches/{match_id}/record", None)
    assert "Matcha-Record-Withheld-From" not in whole.headers
    played = len(whole.json()["events"])
    await api.post(f"/api/matches/{match_id}/disputes", b, {"reason": "only-for-admins-eyes"})

    for viewer in (None, a):
        r = await api.get(f"/api/matches/{match_id}/record", viewer)
        assert r.status_code == 200, r.text
        assert "only-for-admins-eyes" not in r.text
        assert r.headers["Matcha-Record-Withheld-From"] == str(played + 1)
        assert r.json() == whole.json()  # the record of the play, as before the dispute
    admin = await api.get(f"/api/matches/{match_id}/record", api.admin)
    assert "only-for-admins-eyes" in admin.text
    assert len(admin.json()["events"]) == played + 1
    # Both still stand on their own: a prefix of the chain verifies.
    for record in (whole, admin):
        check = await api.client.post("/api/records/check", content=record.content)
        assert check.status_code == 200 and check.json()["ok"], check.text
