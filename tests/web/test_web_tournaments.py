"""The tournament pages in a real headless Chromium: the lobby, an organiser's
new tournament, standings with tie-break columns updating live, each round's
pairings, the crosstable (rounds for a Swiss, a matrix for a round-robin)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from web_pages import sign_in_as
from web_server import Api

pytestmark = pytest.mark.browser


def _me(api: Api, token: str) -> dict[str, Any]:
    me = api.call("GET", "/api/me", token)
    assert isinstance(me, dict)
    return me


def _resign_open_games(api: Api, tournament_id: str, tokens: dict[str, str]) -> int:
    rounds = api.call("GET", f"/api/tournaments/{tournament_id}/rounds")
    assert isinstance(rounds, dict)
    games = [g for r in rounds["rounds"] for g in r["games"] if g["result"] is None]
    for game in games:
        loser = game["players"][1]
        path = f"/api/matches/{game['match_id']}/resign"
        # The pairing is published before the runner has created every game's match:
        # a 404 here is a match about to exist (asked again, within a bound).
        deadline = time.monotonic() + 15.0
        auth = {"Authorization": f"Bearer {tokens[loser]}"}
        while (res := api.http.post(path, headers=auth, json={})).status_code == 404:
            assert time.monotonic() < deadline, f"the match of {game} was never created"
            time.sleep(0.05)  # a poll of the API, bounded by the deadline above
        assert res.status_code < 400, f"POST {path}: {res.status_code} {res.text}"
    return len(games)


def _wait_for_round(api: Api, tournament_id: str, number: int, timeout: float = 15.0) -> None:
    """Until round ``number`` is paired and every earlier game has its result recorded
    (the runner records a result after its match ends: resigning before that would
    resign a game that is already over)."""
    deadline = time.monotonic() + timeout
    while True:
        rounds = api.call("GET", f"/api/tournaments/{tournament_id}/rounds")
        assert isinstance(rounds, dict)
        paired = [r for r in rounds["rounds"] if r["round"] == number]
        earlier = [g for r in rounds["rounds"] if r["round"] < number for g in r["games"]]
        if paired and all(g["result"] is not None for g in earlier):
            return
        assert time.monotonic() < deadline, f"round {number} was not paired: {rounds}"
        time.sleep(0.05)  # a poll of the API, bounded by the deadline above


def test_an_organiser_creates_a_swiss_and_watches_it_live(
    browser: Any, api: Api, app_url: str, screenshots: Path
) -> None:
    ladder = api.ladder("Tournament ladder", "duel")
    admin = _me(api, api.admin_token)
    players = [api.register(f"entrant{i}") for i in range(4)]
    tokens = {p["id"]: p["token"] for p in players}
    ctx = browser.new_context()
    sign_in_as(ctx, api.admin_token, admin["id"], admin["name"])
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(app_url + "/")
    page.click('#site-nav a[href="/tournaments"]')  # every page links the tournament pages
    page.wait_for_selector("#create-tournament")
    assert "No tournaments yet." in page.inner_text("main")
    page.fill("#t-name", "Winter Swiss")
    page.select_option("#t-ladder", ladder)
    page.select_option("#t-format", "swiss")
    page.fill("#t-rounds", "2")
    page.fill("#t-tiebreaks", "buchholz, sonneborn_berger, wins")
    page.click("#create-tournament button[type=submit]")
    page.wait_for_url("**/tournaments/*")
    tournament_id = page.url.rsplit("/", 1)[1].split("#")[0]
    page.wait_for_selector("#standings")
    assert [h.strip() for h in page.locator("#standings th").all_inner_texts()] == [
        "#",
        "Player",
        "Points",
        "W-D-L",
        "BH",
        "SB",
        "WIN",
        "Rating",
    ]

    for p in players:  # they join; the open page hears of each over SSE
        api.call("POST", f"/api/tournaments/{tournament_id}/players", p["token"])
    page.wait_for_function("() => document.querySelectorAll('#standings tbody tr').length === 4")
    page.click("[data-action=start]")
    page.wait_for_function("() => document.querySelector('#phase').textContent === 'running'")
    page.click("[data-tab=pairings]")
    page.wait_for_selector("[data-round='1'] .pairings")
    assert page.locator("[data-round='1'] td.result").all_inner_texts() == ["playing", "playing"]

    assert _resign_open_games(api, tournament_id, tokens) == 2  # seat 0 wins both
    page.wait_for_selector("[data-round='2'] .pairings", timeout=15_000)  # round 2 paired live
    assert page.locator("[data-round='1'] td.result").all_inner_texts() == ["1 \u2013 0"] * 2
    _resign_open_games(api, tournament_id, tokens)
    page.wait_for_function(
        "() => document.querySelector('#phase').textContent === 'finished'", timeout=15_000
    )
    page.click("[data-tab=standings]")
    page.wait_for_selector("#standings")
    points = [float(x) for x in page.locator("#standings td.points").all_inner_texts()]
    assert sorted(points, reverse=True) == points and sum(points) == 4
    page.screenshot(path=str(screenshots / "tournament-standings.png"), full_page=True)
    page.click("[data-tab=crosstable]")
    page.wait_for_selector("#crosstable")
    rows = page.locator("#crosstable tbody tr")
    assert rows.count() == 4
    # each line: place, name, one cell per round (opponent's place, seat, result), points
    assert rows.nth(0).locator("td").count() == 2 + 2 + 1
    page.screenshot(path=str(screenshots / "tournament-crosstable.png"), full_page=True)
    page.goto(app_url + "/tournaments")
    page.wait_for_selector(f"[data-tournament='{tournament_id}']")
    assert "finished" in page.inner_text(f"[data-tournament='{tournament_id}']")
    assert errors == []
    ctx.close()


def test_a_round_robin_crosstable_is_a_matrix(browser: Any, api: Api, app_url: str) -> None:
    ladder = api.ladder("Round-robin ladder", "duel")
    players = [api.register(f"rr{i}") for i in range(3)]
    tokens = {p["id"]: p["token"] for p in players}
    created = api.call(
        "POST",
        "/api/tournaments",
        api.admin_token,
        json={
            "name": "Top three",
            "ladder_id": ladder,
            "format": {"type": "round_robin"},
        },
    )
    assert isinstance(created, dict)
    tid = created["id"]
    for p in players:
        api.call("POST", f"/api/tournaments/{tid}/players", p["token"])
    api.call("POST", f"/api/tournaments/{tid}/start", api.admin_token)
    ctx = browser.new_context()
    page = ctx.new_page()
    for played in range(3):  # three rounds, one player resting each
        _wait_for_round(api, tid, played + 1)
        assert _resign_open_games(api, tid, tokens) == 1
    page.goto(f"{app_url}/tournaments/{tid}#crosstable")
    page.wait_for_function(
        "() => document.querySelector('#phase')?.textContent === 'finished'", timeout=15_000
    )
    page.wait_for_selector("#crosstable")
    cells = page.locator("#crosstable tbody tr").nth(0).locator("td").all_inner_texts()
    assert len(cells) == 2 + 3 + 1 and cells[2] == "■"  # place, name, 3 columns, points
    assert sorted(cells[3:5]) == ["0", "1"] or sorted(cells[3:5]) in (["1", "1"], ["0", "0"])
    ctx.close()


def test_given_a_player_on_a_swiss_page_then_half_points_names_and_buttons_read_right(
    browser: Any, api: Api, app_url: str, screenshots: Path
) -> None:
    ladder = api.ladder("Half points ladder", "duel")
    players = [api.register(f"halfer{i}") for i in range(3)]
    outsider = api.register("outsider")
    created = api.call(
        "POST",
        "/api/tournaments",
        api.admin_token,
        json={
            "name": "Odd Swiss",
            "ladder_id": ladder,
            "format": {"type": "swiss", "rounds": 3, "bye_points": 0.5},
        },
    )
    assert isinstance(created, dict)
    tid = created["id"]
    for p in players:
        api.call("POST", f"/api/tournaments/{tid}/players", p["token"])
    api.call("POST", f"/api/tournaments/{tid}/start", api.admin_token)  # three: one has a ½ bye
    tokens = {p["id"]: p["token"] for p in players}
    _resign_open_games(api, tid, tokens)

    ctx = browser.new_context()
    sign_in_as(ctx, players[0]["token"], players[0]["id"], players[0]["name"])
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{app_url}/tournaments/{tid}")
    page.wait_for_function("() => document.querySelectorAll('#standings tbody tr').length === 3")
    points = page.locator("#standings td.points").all_inner_texts()
    assert "½" in points and "0½" not in " ".join(points), points
    # every name links to the player's page
    links = page.locator("#standings tbody a.player")
    assert links.count() == 3
    assert {links.nth(k).get_attribute("href") for k in range(3)} == {
        f"/player/{p['id']}" for p in players
    }
    # an entrant sees Withdraw, not Join
    assert page.locator("[data-action=withdraw]").count() == 1
    assert page.locator("[data-action=join]").count() == 0
    page.click("[data-tab=pairings]")
    page.wait_for_selector("[data-round='1'] .pairings")
    assert page.locator("[data-round='1'] a.player").count() == 3  # two seats and the bye
    assert "½" in page.inner_text("[data-round='1'] .byes")
    page.screenshot(path=str(screenshots / "tournament-half-points.png"), full_page=True)
    ctx.close()

    # someone not in it sees Join, not Withdraw
    ctx = browser.new_context()
    sign_in_as(ctx, outsider["token"], outsider["id"], outsider["name"])
    page = ctx.new_page()
    page.goto(f"{app_url}/tournaments/{tid}")
    page.wait_for_selector("#standings")
    assert page.locator("[data-action=join]").count() == 1
    assert page.locator("[data-action=withdraw]").count() == 0
    assert errors == []
    ctx.close()
