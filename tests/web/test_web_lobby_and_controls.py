"""The lobby (sign-in, ladders, live scores), keyboard play, accessible card
names, and refusals shown in the service's own words. In a real headless Chromium."""

from __future__ import annotations

import re
from typing import Any

import pytest
from web_pages import sign_in_as, state, version, wait_version
from web_server import Api

pytestmark = pytest.mark.browser

SUIT_NAMES = {"M": "matcha", "C": "chawan", "W": "water", "S": "chashaku"}
CARD_NAME = re.compile(
    r"^(?:tea card )?(?P<code>[MCWSZ][1-4]), "
    r"(?P<name>(?:matcha|chawan|water|chashaku) [1-4]|zero card)"
    r"(?:; wants (?:rank [1-4]|matcha|chawan|water|chashaku))?$"
)


def _mover(api: Api, match_id: str, players: list[dict[str, str]]) -> int:
    seen = api.call("GET", f"/api/matches/{match_id}", players[0]["token"])
    assert isinstance(seen, dict)
    return int(seen["to_move"])


def _play_a_card(
    api: Api, match_id: str, players: list[dict[str, str]]
) -> tuple[int, dict[str, Any]]:
    """The seat to move plays its first legal card: (that seat, its view before the play)."""
    seat = _mover(api, match_id, players)
    view = api.call("GET", f"/api/matches/{match_id}", players[seat]["token"])
    assert isinstance(view, dict)
    play = next(m for m in view["legal_moves"] if m["type"] == "play_card")
    api.call(
        "POST",
        f"/api/matches/{match_id}/play",
        players[seat]["token"],
        json={"card": play["card"], "target": play["target"]},
    )
    return seat, view


def test_a_newcomer_registers_joins_and_sees_live_scores_in_the_lobby(
    browser: Any, api: Api, app_url: str
) -> None:
    ladder = api.ladder("Lobby ladder", "standard")
    rival = api.register("rival")
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(app_url + "/")

    page.fill("#reg-name", "carol")
    page.click("#sign-in button[type=submit]")
    page.wait_for_selector("#signed-in")
    assert "carol" in page.inner_text("#signed-in")
    token = page.evaluate("localStorage.getItem('matcha.token')")
    me = api.call("GET", "/api/me", token)
    assert isinstance(me, dict) and me["name"] == "carol"

    # Signing out and pasting the token back signs in as the same player.
    page.click("#account button")
    page.wait_for_selector("#paste-token")
    page.fill("#paste-token", token)
    page.click("#paste-token ~ button")
    page.wait_for_selector("#signed-in")

    page.click(f'[data-ladder="{ladder}"] [data-action="join"]')
    page.wait_for_selector(f'[data-ladder="{ladder}"] [data-action="queue"]')
    members = api.call("GET", f"/api/ladders/{ladder}/members")
    assert isinstance(members, list) and me["id"] in {m["player_id"] for m in members}

    # A match that starts appears in the live list without a reload...
    players = [{"token": token, "id": me["id"]}, rival]
    match_id = api.start_match(ladder, [rival["token"]], [me["id"], rival["id"]])
    row = f'#live tr[data-match="{match_id}"]'
    page.wait_for_selector(row, timeout=10_000)
    page.wait_for_selector(f'#mine tr[data-match="{match_id}"] a[href="/play/{match_id}"]')

    # ...and its scores follow: a lone card wins its tea card's suit token.
    _play_a_card(api, match_id, players)
    for _ in range(3):
        current = api.call("GET", f"/api/matches/{match_id}", players[0]["token"])
        assert isinstance(current, dict)
        if current["last_reveal"] is not None or current["to_move"] is None:
            break
        api.call(
            "POST", f"/api/matches/{match_id}/pass", players[current["to_move"]]["token"], json={}
        )
    page.wait_for_function(
        "sel => [...document.querySelectorAll(sel + ' .tok')].some((t) => +t.dataset.count > 0)",
        arg=row,
        timeout=10_000,
    )
    assert not errors, errors
    ctx.close()


def test_a_player_plays_by_keyboard_and_a_refused_move_is_explained(
    browser: Any, api: Api, app_url: str
) -> None:
    _, match_id, players = api.alice_and_bob("Keys", "standard")
    seat = _mover(api, match_id, players)
    mover = players[seat]

    ctx = browser.new_context()
    sign_in_as(ctx, mover["token"], mover["id"], "mover")
    page = ctx.new_page()
    page.goto(f"{app_url}/play/{match_id}")
    page.wait_for_selector(".seat.near button.card")

    # Every card has an accessible name with its code and suit, not colour alone.
    cards = page.query_selector_all("[data-card]")
    assert len(cards) == 6 + 5  # six tea cards, a hand of five
    for el in cards:
        label = el.get_attribute("aria-label") or ""
        named = CARD_NAME.match(label)
        assert named, label
        code = el.get_attribute("data-card") or ""
        assert named["code"] == code, label
        suit = SUIT_NAMES.get(code[0])
        assert named["name"] == (f"{suit} {code[1]}" if suit else "zero card"), label

    # Keyboard only: focus a card, Enter picks it, focus moves to a legal target, Enter plays.
    before = version(page)
    page.focus(".seat.near button.card:not([disabled])")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.keyboard.press("Enter")
    page.wait_for_function("document.activeElement.matches('button.target')")
    page.keyboard.press("Enter")
    wait_version(page, before + 1)
    assert state(page)["toMove"] == str(1 - seat)

    # The other seat passes: the page hears it live, and it is our turn again.
    other = players[1 - seat]
    api.call("POST", f"/api/matches/{match_id}/pass", other["token"], json={})
    wait_version(page, before + 2)
    page.wait_for_selector("#pass:not([disabled])")

    # Now the page stops hearing the service, and another tab of ours moves
    # meanwhile: the page's move is refused, in the service's own words.
    page.route_web_socket("**/ws*", lambda ws: None)
    page.reload()
    page.wait_for_selector("#pass:not([disabled])")
    stale = version(page)
    page.route(f"**/api/matches/{match_id}", lambda route: route.abort())
    api.call("POST", f"/api/matches/{match_id}/pass", mover["token"], json={})
    res = api.http.post(
        f"/api/matches/{match_id}/pass",
        headers={"Authorization": f"Bearer {mover['token']}"},
        json={"expected_version": stale},
    )
    assert res.status_code >= 400 and res.headers["content-type"].startswith(
        "application/problem+json"
    )
    page.click("#pass")
    page.wait_for_function("document.querySelector('#message').textContent.length > 0")
    assert page.inner_text("#message") == res.json()["detail"]
    ctx.close()


def test_a_page_whose_websocket_keeps_failing_follows_the_match_over_sse(
    browser: Any, api: Api, app_url: str
) -> None:
    _, match_id, players = api.alice_and_bob("Fallback", "standard")
    seat = _mover(api, match_id, players)

    ctx = browser.new_context()
    sign_in_as(ctx, players[1 - seat]["token"], players[1 - seat]["id"], "waiting")
    page = ctx.new_page()
    # A proxy that accepts the WebSocket upgrade and hangs up at once, every time.
    page.route_web_socket("**/ws*", lambda ws: ws.close())
    page.goto(f"{app_url}/play/{match_id}")
    page.wait_for_selector("#live-state:text('live (SSE)')", timeout=15_000)

    before = version(page)
    api.call("POST", f"/api/matches/{match_id}/pass", players[seat]["token"], json={})
    wait_version(page, before + 1)
    assert state(page)["toMove"] == str(1 - seat)
    ctx.close()


def test_a_ladder_that_hides_hands_keeps_them_out_of_its_replays(
    browser: Any, api: Api, app_url: str
) -> None:
    _, match_id, players = api.alice_and_bob("Secret hands", "standard", hide_hands_in_replay=True)
    seat, view = _play_a_card(api, match_id, players)
    api.call("POST", f"/api/matches/{match_id}/resign", players[1 - seat]["token"], json={})
    hidden = set(view["seats"][seat]["hand"])

    page = browser.new_context().new_page()
    page.goto(f"{app_url}/replay/{match_id}")
    page.wait_for_selector("#frame-no")
    page.click("#last")
    page.wait_for_selector("#result")
    assert page.get_attribute("#result", "data-winner") == str(seat)
    assert page.is_disabled("#show-hands")
    assert not page.query_selector_all(".seat .hand [data-card]")
    shown = set(re.findall(r'data-card="([A-Z]\d)"', page.inner_html("main")))
    assert not shown & hidden, shown & hidden
    page.context.close()


def test_two_players_find_each_other_through_the_lobby_queue(
    browser: Any, api: Api, app_url: str
) -> None:
    ladder = api.ladder("Queue", "duel")
    pages = []
    for name in ("dana", "eli"):
        player = api.register(name)
        api.call("POST", f"/api/ladders/{ladder}/members", player["token"])
        ctx = browser.new_context()
        sign_in_as(ctx, player["token"], player["id"], name)
        page = ctx.new_page()
        page.goto(app_url + "/")
        page.wait_for_selector(f'[data-ladder="{ladder}"] [data-action="queue"]')
        pages.append(page)

    # The first waits; the second is paired at once and sent to the table; the
    # first hears of the match on the lobby stream and is sent there too.
    pages[0].click(f'[data-ladder="{ladder}"] [data-action="queue"]')
    pages[0].wait_for_selector(f'[data-ladder="{ladder}"] [data-action="queue"]:disabled')
    pages[1].click(f'[data-ladder="{ladder}"] [data-action="queue"]')
    for page in pages:
        page.wait_for_url("**/play/*", timeout=10_000)
        page.wait_for_selector(".table")
    assert pages[0].url == pages[1].url
    seats = {page.get_attribute(".seat.near", "data-seat") for page in pages}
    assert seats == {"0", "1"}
    for page in pages:
        page.context.close()
