"""Every page at 1280x800 and 390x844: screenshots, axe-core with no serious
violation, and what each page must get right (phone layout, replay jump labels,
player pages, admin pages, the API docs offline). In a real headless Chromium.

The matches are played over HTTP by bots (the click-by-click match is in
test_web_match_pages.py); the pages are then read as a person would.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import httpx
import pytest
from web_pages import VIEWPORTS, serious_a11y_violations, sign_in_as, uncovered
from web_server import Api

from service.bots import heuristic_bot, random_bot
from service.bots.seat_view import bot_request
from workers.ratings import update_ladder

pytestmark = pytest.mark.browser


def _play(
    api: Api, match_id: str, tokens: list[str], rng: random.Random, moves: int = 10_000
) -> None:
    """Bots play the match over HTTP (to its end, or for ``moves`` commands)."""
    for _ in range(moves):
        views = [api.call("GET", f"/api/matches/{match_id}", t) for t in tokens]
        if views[0]["result"] is not None:  # type: ignore[index]
            return
        for seat in (0, 1):
            request = bot_request(views[seat], (random_bot, heuristic_bot)[seat], rng)  # type: ignore[arg-type]
            if request is not None:
                route, body = request
                body["expected_version"] = views[seat]["version"]  # type: ignore[index]
                api.call("POST", f"/api/matches/{match_id}/{route}", tokens[seat], json=body)
                break


@pytest.fixture
def site(api: Api, database_url: str) -> dict[str, Any]:
    """A ladder with three finished matches (rated), one being played, and a dispute."""
    alice, bob, carol = api.register("alice"), api.register("bob"), api.register("carol")
    ladder = api.ladder("Kyoto spring", "duel")
    finished = []
    for n, (x, y) in enumerate(((alice, bob), (bob, alice), (alice, carol))):
        match_id = api.start_match(ladder, [x["token"], y["token"]], [x["id"], y["id"]])
        _play(api, match_id, [x["token"], y["token"]], random.Random(n))
        finished.append(match_id)
    update_ladder(ladder, database_url=database_url)
    live = api.start_match(ladder, [bob["token"], carol["token"]], [bob["id"], carol["id"]])
    _play(api, live, [bob["token"], carol["token"]], random.Random(9), moves=4)
    api.call(
        "POST", f"/api/matches/{finished[0]}/disputes", alice["token"], json={"reason": "too fast"}
    )
    return {"alice": alice, "bob": bob, "carol": carol, "ladder": ladder, "finished": finished,
            "live": live}  # fmt: skip


def _visit(
    browser: Any,
    url: str,
    size: str,
    screenshots: Path,
    name: str,
    who: dict[str, str] | None,
    ready: str,
) -> tuple[Any, list[str]]:
    ctx = browser.new_context(viewport=VIEWPORTS[size])
    if who is not None:
        sign_in_as(ctx, who["token"], who["id"], who["name"])
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.wait_for_selector(ready)
    page.wait_for_timeout(300)  # let a reveal's cards finish turning before the picture
    page.screenshot(path=str(screenshots / f"{name}-{size}.png"), full_page=True)
    return page, errors


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_every_page_reads_well_and_passes_axe_at_both_sizes(
    browser: Any, api: Api, app_url: str, site: dict[str, Any], screenshots: Path, size: str
) -> None:
    alice = {**site["alice"], "name": "alice"}
    first = site["finished"][0]
    pages = [
        ("lobby", "/", alice, ".tabbed.lobby"),
        ("watch", f"/watch/{site['live']}", None, ".table"),
        ("play-ended", f"/play/{first}", alice, "#end .why"),
        ("replay", f"/replay/{first}", None, ".table"),
        ("player", f"/player/{alice['id']}", None, "svg.history"),
        ("admin-refused", "/admin", alice, "#not-admin"),
    ]
    # Pages another test below reads at this size (with its own axe check) are left to it.
    elsewhere = {"phone": {"lobby", "watch"}, "desktop": {"replay", "player"}}[size]
    for name, path, who, ready in pages:
        if name in elsewhere:
            continue
        page, errors = _visit(browser, app_url + path, size, screenshots, name, who, ready)
        assert not serious_a11y_violations(page), (name, serious_a11y_violations(page))
        assert not errors, (name, errors)
        # Nothing wider than the screen (a phone would scroll sideways).
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= VIEWPORTS[size]["width"], (name, width)
        page.context.close()


def test_on_a_phone_the_lobby_folds_into_tabs_and_a_spectator_sees_both_seats(
    browser: Any, app_url: str, site: dict[str, Any], screenshots: Path
) -> None:
    lobby, _ = _visit(browser, f"{app_url}/", "phone", screenshots, "lobby", None, ".tabs")
    assert not serious_a11y_violations(lobby), serious_a11y_violations(lobby)
    assert lobby.evaluate("document.documentElement.scrollHeight") <= 1.2 * 844
    assert lobby.is_visible("#reg-name") and not lobby.is_visible("#live")
    lobby.click("#tab-live")
    lobby.wait_for_selector(f'#live tr[data-match="{site["live"]}"]')
    assert not lobby.is_visible("#reg-name")
    lobby.keyboard.press("ArrowRight")  # WAI-ARIA tabs: the arrows move between them
    lobby.wait_for_selector("#tab-finished[aria-selected=true]")
    lobby.wait_for_selector(f'#finished tr[data-match="{site["finished"][0]}"]')
    lobby.context.close()

    watch, _ = _visit(
        browser, f"{app_url}/watch/{site['live']}", "phone", screenshots, "watch", None, ".table"
    )
    assert not serious_a11y_violations(watch), serious_a11y_violations(watch)
    top = watch.evaluate("document.querySelector('.seat.far').getBoundingClientRect().top")
    bottom = watch.evaluate("document.querySelector('.seat.near').getBoundingClientRect().bottom")
    assert bottom - top <= 844, f"both seats need {bottom - top} px: not on one phone screen"
    watch.context.close()


def test_on_a_phone_nothing_covers_a_target_while_a_seat_plays(
    browser: Any, api: Api, app_url: str, screenshots: Path
) -> None:
    _, match_id, players = api.alice_and_bob("Phone", "standard")
    view = api.call("GET", f"/api/matches/{match_id}", players[0]["token"])
    seat = view["to_move"]  # type: ignore[index]
    mover = {**players[seat], "name": "mover"}
    page, _ = _visit(
        browser, f"{app_url}/play/{match_id}", "phone", screenshots, "play-phone", mover,
        ".seat.near button.card:not([disabled])",
    )  # fmt: skip
    page.click(".seat.near button.card:not([disabled])")
    page.wait_for_selector("button.target")
    page.screenshot(path=str(screenshots / "play-phone-choosing-phone.png"), full_page=True)
    assert not uncovered(page, "button.target"), uncovered(page, "button.target")
    assert not uncovered(page, ".seat.near button.card"), uncovered(page, ".seat.near button.card")
    assert not uncovered(page, "#pass"), uncovered(page, "#pass")
    assert not serious_a11y_violations(page), serious_a11y_violations(page)
    page.context.close()


def test_each_replay_jump_label_names_the_frame_it_opens_and_the_scrubber_marks_them(
    browser: Any, api: Api, app_url: str, site: dict[str, Any], screenshots: Path
) -> None:
    match_id = site["finished"][1]
    replay = api.call("GET", f"/api/matches/{match_id}/replay")
    assert isinstance(replay, dict)
    page, _ = _visit(
        browser, f"{app_url}/replay/{match_id}", "desktop", screenshots, "replay", None, ".table"
    )
    assert not serious_a11y_violations(page), serious_a11y_violations(page)
    first_deal = next(f["version"] for f in replay["summary"] if f["type"] == "hand_dealt")
    assert page.get_attribute(".table", "data-version") == str(first_deal)
    options = page.eval_on_selector_all(
        "#jump option[value]:not([value=''])", "os => os.map(o => [o.value, o.textContent])"
    )
    assert len({label for _, label in options}) == len(options), options  # none listed twice
    reveals = [f for f in replay["summary"] if f["type"] == "round_revealed"]
    assert sum("reveal" in label for _, label in options) == len(reveals)
    for value, label in options:
        page.select_option("#jump", value)
        page.wait_for_selector(f".table[data-version='{value}']")
        frame = api.call("GET", f"/api/matches/{match_id}/replay/frames/{value}")
        assert isinstance(frame, dict)
        event = frame["event"]
        if event["type"] == "round_revealed":
            assert label.startswith(f"Hand {event['hand']}, round {event['round']} "), (
                label,
                event,
            )
            assert page.get_attribute("#what", "data-round") == str(event["round"])
            page.wait_for_selector(f".reveal[data-key='{event['hand']}:{event['round']}']")
        elif event["type"] == "hand_dealt":
            assert label == f"Hand {event['hand']}: the deal", (label, event)
        else:
            assert event["type"] in ("match_ended", "match_annulled") and label == "The end"
    # The scrubber carries one mark per jump, each opening its frame.
    marks = page.eval_on_selector_all(".ticks .tick", "ts => ts.map(t => t.dataset.frame)")
    assert marks == [value for value, _ in options]
    page.click(f".ticks .tick[data-frame='{first_deal}']")
    page.wait_for_selector(f".table[data-version='{first_deal}']")
    page.context.close()


def test_a_player_page_charts_each_ladder_and_lists_matches_and_head_to_head(
    browser: Any, api: Api, app_url: str, site: dict[str, Any], screenshots: Path
) -> None:
    alice = site["alice"]
    history = api.call("GET", f"/api/ladders/{site['ladder']}/players/{alice['id']}/ratings")
    assert isinstance(history, dict)
    page, _ = _visit(
        browser, f"{app_url}/player/{alice['id']}", "desktop", screenshots, "player", None,
        "svg.history",
    )  # fmt: skip
    assert not serious_a11y_violations(page), serious_a11y_violations(page)
    chart = page.query_selector(f'[data-ladder="{site["ladder"]}"] svg.history')
    assert chart is not None
    assert chart.get_attribute("data-points") == str(len(history["history"]) + 1)
    axis = chart.text_content() or ""
    assert "games played" in axis and str(round(history["rating"])) in axis
    for finished in site["finished"]:
        page.wait_for_selector(f'#recent tr[data-match="{finished}"] a[href="/replay/{finished}"]')
    page.wait_for_selector(f'#h2h tr[data-opponent="{site["bob"]["id"]}"]')
    # Names link to player pages everywhere: from here to bob's.
    page.click(f'#h2h a[data-player="{site["bob"]["id"]}"]')
    page.wait_for_selector("#player-name:text-is('bob')")
    page.context.close()


def test_admin_pages_show_the_queue_an_audit_for_people_and_decide_with_a_reason(
    browser: Any, api: Api, app_url: str, site: dict[str, Any], screenshots: Path
) -> None:
    admin = api.call("GET", "/api/me", api.admin_token)
    assert isinstance(admin, dict)
    who = {"token": api.admin_token, "id": admin["id"], "name": admin["name"]}
    match_id = site["finished"][0]
    for size in ("desktop", "phone"):
        page, _ = _visit(browser, f"{app_url}/admin", size, screenshots, "admin", who, "#queue")
        row = page.wait_for_selector(f'#queue tr[data-match="{match_id}"]')
        assert row is not None and "alice" in row.inner_text() and "too fast" in row.inner_text()
        assert not serious_a11y_violations(page), serious_a11y_violations(page)
        page.click(f'#queue tr[data-match="{match_id}"] a.btn')
        page.wait_for_selector("#verdict")
        page.screenshot(path=str(screenshots / f"admin-audit-{size}.png"), full_page=True)
        assert not serious_a11y_violations(page), serious_a11y_violations(page)
        report = api.call("GET", f"/api/admin/matches/{match_id}/audit", api.admin_token)
        assert isinstance(report, dict)
        assert len(page.query_selector_all(".check")) == len(report["checks"]) == 6
        assert len(page.query_selector_all("#timeline li")) == len(report["events"])
        timeline = page.inner_text("#timeline")
        assert "alice" in timeline and "bob" in timeline
        assert alice_id_not_shown(timeline, site)
        page.context.close()

    page, _ = _visit(
        browser, f"{app_url}/admin/matches/{match_id}", "desktop", screenshots, "admin-decide",
        who, "form.decide",
    )  # fmt: skip
    page.click("[data-action='reject']")  # no reason yet: the form refuses
    page.wait_for_timeout(300)
    disputes = api.call("GET", "/api/admin/disputes", api.admin_token)
    assert isinstance(disputes, list) and len(disputes) == 1
    page.fill("form.decide textarea", "The timings are those of a quick, honest player.")
    page.click("[data-action='reject']")
    page.wait_for_selector(".dispute.rejected")
    assert api.call("GET", "/api/admin/disputes", api.admin_token) == []
    page.context.close()


def alice_id_not_shown(text: str, site: dict[str, Any]) -> bool:
    """People, not UUIDs: no player's id appears in the page's text."""
    return not any(site[p]["id"] in text for p in ("alice", "bob", "carol"))


def test_the_api_docs_page_works_offline_with_its_own_assets(
    browser: Any, app_url: str, screenshots: Path
) -> None:
    ctx = browser.new_context(viewport=VIEWPORTS["desktop"])
    host = app_url.split("//", 1)[1]
    outside: list[str] = []

    def only_local(route: Any) -> None:
        url = route.request.url
        if url.startswith("data:") or url.split("//", 1)[-1].startswith(host):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    ctx.route("**/*", only_local)
    page = ctx.new_page()
    page.goto(f"{app_url}/schema/swagger")
    page.wait_for_selector(".opblock", timeout=15_000)  # the operations are drawn
    page.screenshot(path=str(screenshots / "api-docs.png"))
    assert not outside, outside
    assert "Matcha match service" in page.inner_text(".info")
    ctx.close()
    assert httpx.get(f"{app_url}/schema/assets/swagger-ui.css").status_code == 200


def test_glicko2_uncertainty_is_shown_when_the_api_gives_it(
    browser: Any, app_url: str, site: dict[str, Any], screenshots: Path
) -> None:
    """The ratings work adds rd, interval (CONTRACTS 2): the pages draw them when present
    (here the answers are given those fields in the browser) and do without when absent."""
    import json as _json

    alice = site["alice"]

    def with_rd(route: Any) -> None:
        body = route.fetch().json()
        if "standings" in body:
            for s in body["standings"]:
                s.update(rd=60.0, interval=[s["rating"] - 120, s["rating"] + 120])
        for e in body.get("history", []):
            e.update(rd_before=80.0, rd_after=60.0)
        route.fulfill(body=_json.dumps(body), content_type="application/json")

    ctx = browser.new_context(viewport=VIEWPORTS["desktop"])
    ctx.route("**/leaderboard*", with_rd)
    ctx.route("**/ratings*", with_rd)
    page = ctx.new_page()
    page.goto(f"{app_url}/player/{alice['id']}")
    page.wait_for_selector("svg.history path.band")
    assert "±120" in page.inner_text(".standing") and "95%:" in page.inner_text(".standing")
    page.screenshot(path=str(screenshots / "player-glicko2-desktop.png"), full_page=True)
    ctx.close()
    # Without the fields (today's Elo answers): no band, no ±.
    plain = browser.new_context(viewport=VIEWPORTS["desktop"]).new_page()
    plain.goto(f"{app_url}/player/{alice['id']}")
    plain.wait_for_selector("svg.history path.line")
    assert not plain.query_selector("svg.history path.band")
    assert "±" not in plain.inner_text(".standing")
    plain.context.close()
