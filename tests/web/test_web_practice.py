"""Practice against a bot from the lobby, in a real headless Chromium: the
lobby's link, the practice page, and the bot answering on the play page."""

from __future__ import annotations

import random
from typing import Any

import pytest
from web_pages import sign_in_as, state, take_turn, wait_version
from web_server import Api

pytestmark = pytest.mark.browser


def test_a_player_starts_a_practice_match_from_the_lobby_and_the_bot_answers(
    browser: Any, api: Api, app_url: str
) -> None:
    me = api.register("learner")
    context = browser.new_context()
    sign_in_as(context, me["token"], me["id"], "learner")
    page = context.new_page()
    page.goto(app_url + "/")
    page.click("#practice-link")
    page.wait_for_selector("#practice-level option", state="attached")
    levels = page.eval_on_selector_all("#practice-level option", "os => os.map(o => o.value)")
    assert levels == ["beginner", "casual", "strong", "master"]
    page.select_option("#practice-level", "beginner")
    page.select_option("#practice-ruleset", "duel")
    page.select_option("#practice-seat", "1")
    page.click("#practice button[type=submit]")
    page.wait_for_url("**/play/*")
    match_id = page.url.rsplit("/", 1)[1]

    # Whoever deals, the bot (seat 0) answers on this page within seconds.
    rng = random.Random(1)
    for _ in range(20):
        before = state(page)["version"]
        if not take_turn(page, rng):
            wait_version(page, before + 1)  # the bot's move, live
        log = api.call("GET", f"/api/matches/{match_id}/events", me["token"])
        assert isinstance(log, list)
        if any(e["actor"] == "bot-beginner" and e["event"]["type"] == "card_played" for e in log):
            break
    else:
        pytest.fail("the bot never played a card")
    wait_version(page, log[-1]["version"])  # and the page shows it
    # The bot plays from the server and never opens the match's socket, yet it is never
    # "away": no "has left the match" notice, and its seat shows it connected.
    page.wait_for_selector(".dot", timeout=15_000)  # the live stream's presence is in
    assert page.query_selector("#opponent-away") is None, page.inner_text("#opponent-away")
    dots = page.eval_on_selector_all(".dot", "ds => ds.map(d => d.classList.contains('on'))")
    assert dots == [True, True], dots
    context.close()
