"""The win-probability bar in Chromium: a spectator watching a live match sees each
seat's chance move as the match is played (from the stream's odds frames); the
replay shows the odds at each frame; a player of the match never sees the bar."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from web_pages import serious_a11y_violations, sign_in_as
from web_server import Api

from service.bots.seat_view import move_request

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _cheap_odds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATCHA_WINPROB_PLAYOUTS", "30")
    monkeypatch.setenv("MATCHA_WINPROB_MAX_MS", "0")


def _move(api: Api, match_id: str, seats: list[dict[str, str]], rng: random.Random) -> bool:
    """One random legal command by whoever may act; False once the match is over."""
    for seat in seats:
        view: Any = api.call("GET", f"/api/matches/{match_id}", seat["token"])
        if view["result"] is not None:
            return False
        moves = [m for m in view["legal_moves"] if m["type"] != "resign"]
        if moves:
            request = move_request(rng.choice(moves))
            assert request is not None
            path, body = request
            api.call(
                "POST",
                f"/api/matches/{match_id}/{path}",
                seat["token"],
                json={**body, "expected_version": view["version"]},
            )
            return True
    raise AssertionError("nobody may act")


def test_a_spectator_sees_the_odds_bar_move_and_a_player_never_sees_it(
    api: Api, browser: Any, app_url: str, screenshots: Path
) -> None:
    _, match_id, seats = api.alice_and_bob("Odds", "duel")
    spectator = browser.new_page(viewport={"width": 1280, "height": 800})
    spectator.goto(f"{app_url}/watch/{match_id}")
    spectator.wait_for_selector("#odds[data-version]", timeout=20_000)
    first = spectator.get_attribute("#odds", "data-version")
    rng = random.Random(9)
    for _ in range(6):
        _move(api, match_id, seats, rng)
    spectator.wait_for_function(
        "v => { const o = document.querySelector('#odds');"
        " return o && o.dataset.version && o.dataset.version !== v; }",
        arg=first,
        timeout=20_000,
    )
    label = spectator.get_attribute("#odds", "aria-label") or ""
    assert label.startswith("Win probability: alice") and "bob" in label and "%" in label
    assert not serious_a11y_violations(spectator), serious_a11y_violations(spectator)
    spectator.screenshot(path=str(screenshots / "watch-odds.png"))

    context = browser.new_context(viewport={"width": 390, "height": 844})
    sign_in_as(context, seats[0]["token"], seats[0]["id"], seats[0]["name"])
    player = context.new_page()
    player.goto(f"{app_url}/play/{match_id}")
    player.wait_for_selector("#status", timeout=20_000)
    player.wait_for_timeout(1500)
    assert player.query_selector("#odds") is None, "a player was shown the odds"

    while _move(api, match_id, seats, rng):
        pass
    replay = browser.new_page(viewport={"width": 1280, "height": 800})
    replay.goto(f"{app_url}/replay/{match_id}?frame=3")
    replay.wait_for_selector("#odds[data-version]", timeout=20_000)
    assert int(replay.get_attribute("#odds", "data-version") or 0) <= 3
    replay.screenshot(path=str(screenshots / "replay-odds.png"))
    for page in (spectator, replay):
        page.close()
    context.close()


def test_given_no_estimate_for_a_frame_the_replay_says_so_after_a_few_asks_never_a_loop(
    browser: Any, api: Api, app_url: str, screenshots: Path
) -> None:
    from test_web_every_page import _play

    _, match_id, (alice, bob) = api.alice_and_bob("No odds", "duel")
    _play(api, match_id, [alice["token"], bob["token"]], random.Random(3))
    asked: list[str] = []

    def pending_forever(route: Any) -> None:
        asked.append(route.request.url)
        route.fulfill(
            status=404,
            content_type="application/problem+json",
            body='{"status":404,"code":"estimate_pending","detail":"No estimate yet."}',
        )

    page = browser.new_page()
    page.route("**/win-probability*", pending_forever)
    page.goto(f"{app_url}/replay/{match_id}?frame=2")
    page.wait_for_selector("#odds[data-unavailable]", timeout=30_000)
    assert "No odds for this moment" in page.inner_text("#odds")
    at_two = [u for u in asked if u.endswith("version=2")]
    assert len(at_two) == 4, asked  # asked, then three more times, then shown as none
    page.screenshot(path=str(screenshots / "replay-no-odds.png"))
    # Back on that frame later: the page remembers, it does not ask again.
    scrub = "(e, n) => { e.value = n; e.dispatchEvent(new Event('input')); }"
    page.eval_on_selector("#scrub", scrub, 3)
    page.wait_for_selector("#what:not([data-type='hand_dealt'])")
    page.eval_on_selector("#scrub", scrub, 2)
    page.wait_for_selector("#odds[data-unavailable]")
    assert len([u for u in asked if u.endswith("version=2")]) == 4, asked
    page.close()
