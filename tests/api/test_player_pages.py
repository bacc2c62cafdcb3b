"""The read-only routes behind the web client's player, end-screen and admin pages:
names, profiles, head-to-head records, a match's outcome, the dispute queue."""

from __future__ import annotations

import random
from typing import Any

import pytest
from api_harness import Api, assert_problem
from harness import play_out
from litestar import Litestar
from test_time_out_claims import BLITZ, claim, clocked, deadline_of

from workers.ratings import update_ladder

pytestmark = pytest.mark.anyio


async def _two_matches(api: Api, database_url: str) -> tuple[str, list[str], Any, Any]:
    ladder, first, a, b = await api.new_ladder_match("duel")
    await play_out(api, first, (a, b), random.Random(1))
    organiser = await api.organiser()
    second = await api.pair(ladder, organiser, b, a)  # the other way round
    await play_out(api, second, (b, a), random.Random(2))
    return ladder, [first, second], a, b


async def test_given_a_no_show_the_aborted_match_is_counted_aborted_never_drawn(
    api: Api, app: Litestar
) -> None:
    now = clocked(app)
    match_id, a, b = await api.new_match(clock=BLITZ)
    mover = (await api.view(match_id, a))["to_move"]
    now.at = await deadline_of(app, match_id, mover)
    answer = await claim(api, match_id, b if mover == 0 else a)
    assert answer.status_code == 200, answer.text  # type: ignore[attr-defined]

    for who in (a, b):
        record = (await api.get(f"/api/players/{who.id}", None)).json()["record"]
        assert record == {
            "matches": 1, "wins": 0, "draws": 0, "losses": 0, "live": 0, "aborted": 1,
        }  # fmt: skip
        [h2h] = (await api.get(f"/api/players/{who.id}/head-to-head", None)).json()
        assert (h2h["matches"], h2h["wins"], h2h["draws"], h2h["losses"], h2h["aborted"]) == (
            1, 0, 0, 0, 1,
        )  # fmt: skip
    [listed] = (await api.get("/api/matches", None, player=a.id)).json()
    assert (listed["status"], listed["winner"], listed["end_reason"]) == (
        "finished",
        None,
        "aborted",
    )


async def test_a_profile_gives_each_ladder_standing_and_the_record_and_h2h_counts_them(
    api: Api, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ladder, matches, a, b = await _two_matches(api, database_url)
    monkeypatch.setenv("DATABASE_URL", database_url)
    update_ladder(ladder, database_url=database_url)

    listed = (await api.get("/api/matches", None, player=a.id, status="finished")).json()
    wins = sum(1 for m in listed if m["winner"] is not None and m["players"][m["winner"]] == a.id)
    draws = sum(1 for m in listed if m["winner"] is None)

    profile = (await api.get(f"/api/players/{a.id}", None)).json()
    assert profile["name"] == a.name and "player" in profile["roles"]
    assert profile["record"] == {
        "matches": 2, "wins": wins, "draws": draws, "losses": 2 - wins - draws, "live": 0,
        "aborted": 0,
    }  # fmt: skip
    [standing] = profile["ladders"]
    board = (await api.get(f"/api/ladders/{ladder}/leaderboard", None)).json()["standings"]
    mine = next(s for s in board if s["player_id"] == a.id)
    assert standing["ladder_id"] == ladder and standing["rank"] == mine["rank"]
    assert standing["rating"] == mine["rating"] and standing["games"] == 2
    assert standing["players"] == 2 and standing["joined_at"] is not None

    [h2h] = (await api.get(f"/api/players/{a.id}/head-to-head", None)).json()
    assert h2h["opponent_id"] == b.id and h2h["opponent_name"] == b.name
    assert (h2h["matches"], h2h["wins"], h2h["draws"]) == (2, wins, draws)
    assert h2h["last_match_id"] in matches
    assert (await api.get(f"/api/players/{b.id}/head-to-head", None, opponent=a.id)).json()[0][
        "losses"
    ] == wins

    names = (await api.get("/api/players", None, ids=f"{a.id},{b.id},nobody")).json()
    assert {n["id"]: n["name"] for n in names} == {a.id: a.name, b.id: b.name}
    by_name = (await api.get("/api/players", None, name=a.name.upper())).json()
    assert by_name == [{"id": a.id, "name": a.name}]
    assert_problem(await api.get("/api/players/nobody", None), 404, "player_not_found")
    assert_problem(await api.get("/api/players", None), 400, "bad_query")


async def test_the_outcome_tells_how_the_match_was_decided_with_each_rating_change(
    api: Api, database_url: str
) -> None:
    ladder, match_id, a, b = await api.new_ladder_match("duel")
    refused = await api.get(f"/api/matches/{match_id}/outcome", None)
    assert_problem(refused, 409, "match_not_finished")

    final = await play_out(api, match_id, (a, b), random.Random(3))
    told = (await api.get(f"/api/matches/{match_id}/outcome", None)).json()
    assert told["winner"] == final["result"]["winner"]
    assert told["reason"] == final["result"]["reason"]
    assert told["rated"] is True and told["ratings_applied"] is False
    for seat in (0, 1):
        shown = told["seats"][seat]
        assert shown["tokens"] == final["seats"][seat]["tokens"]
        assert bool(shown["winning_sets"]) == final["seats"][seat]["qualifies"]
    if told["decided_by"] == "winning_set":
        assert told["seats"][told["winner"]]["winning_sets"]
        assert told["comparison"] == []
    if told["decided_by"] in ("comparison", "hand_limit", "draw"):
        last = told["comparison"][-1]
        if told["winner"] is not None:
            assert last["counts"][told["winner"]] > last["counts"][1 - told["winner"]]

    update_ladder(ladder, database_url=database_url)
    rated = (await api.get(f"/api/matches/{match_id}/outcome", None)).json()
    assert rated["ratings_applied"] is True
    history = (await api.get(f"/api/ladders/{ladder}/players/{a.id}/ratings", None)).json()
    entry = history["history"][0]
    assert rated["seats"][0]["rating_before"] == entry["before"]
    assert rated["seats"][0]["rating_after"] == entry["after"]


async def test_the_dispute_queue_is_for_admins_and_names_everyone(api: Api) -> None:
    ladder, match_id, a, b = await api.new_ladder_match("duel")
    await play_out(api, match_id, (a, b), random.Random(4))
    filed = await api.post(f"/api/matches/{match_id}/disputes", a, {"reason": "b was too fast"})
    assert filed.status_code == 201, filed.text

    assert_problem(await api.get("/api/admin/disputes", a), 403, "forbidden")
    [queued] = (await api.get("/api/admin/disputes", api.admin)).json()
    assert queued["match_id"] == match_id and queued["state"] == "filed"
    assert queued["filer"] == a.id and queued["filer_name"] == a.name
    assert queued["player_names"] == [a.name, b.name]
    assert queued["reason"] == "b was too fast" and queued["ladder_id"] == ladder

    decided = await api.post(
        f"/api/admin/disputes/{queued['dispute_id']}/decision",
        api.admin,
        {"upheld": False, "reason": "the timings are normal"},
    )
    assert decided.status_code == 200, decided.text
    assert (await api.get("/api/admin/disputes", api.admin)).json() == []
    [done] = (await api.get("/api/admin/disputes", api.admin, state="rejected")).json()
    assert (
        done["decided_by_name"] == "admin" and done["decision_reason"] == "the timings are normal"
    )
