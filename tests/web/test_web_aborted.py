"""An aborted match (a seat made no first move in time) is shown as aborted, never as a
draw: in the lobby's finished matches, on the player page's recent matches, record
and head to head. In a real headless Chromium against the real API."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from web_server import Api

pytestmark = pytest.mark.browser

NO_SHOW = {"kind": "real_time", "base_s": 60, "increment_s": 0, "no_show_s": 1}


def _abort(api: Api, match_id: str, tokens: list[str], timeout_s: float = 15) -> None:
    """Whoever is not to move claims the no-show once the mover's second has run out
    (refused with 409 time_not_expired until then)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for token in tokens:
            answer = httpx.post(
                f"{api.base}/api/matches/{match_id}/time-out",
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
            if answer.status_code == 200:
                assert answer.json()["view"]["result"]["reason"] == "aborted"
                return
            assert answer.json()["code"] == "time_not_expired", answer.text
        time.sleep(0.1)
    pytest.fail("the no-show was never granted")


def test_given_a_no_show_the_lobby_and_the_player_page_say_aborted_never_draw(
    browser: Any, api: Api, app_url: str
) -> None:
    _, match_id, (alice, bob) = api.alice_and_bob("No-show ladder", "duel", clock=NO_SHOW)
    _abort(api, match_id, [alice["token"], bob["token"]])

    page = browser.new_page()
    page.goto(app_url + "/")
    row = f'tr[data-match="{match_id}"] td.res'
    page.wait_for_selector(row, timeout=15_000)
    assert page.inner_text(row) == "aborted"

    page.goto(f"{app_url}/player/{alice['id']}")
    page.wait_for_selector(f'#recent tr[data-match="{match_id}"]')
    assert page.inner_text(f'#recent tr[data-match="{match_id}"] td.res') == "aborted"
    assert "0 drawn" in page.inner_text("#record") and "1 aborted" in page.inner_text("#record")
    cells = page.eval_on_selector_all(
        f'#h2h tr[data-opponent="{bob["id"]}"] td.num', "tds => tds.map(t => t.textContent)"
    )
    assert cells == ["1", "0", "0", "0", "1"]  # played, won, drawn, lost, aborted
    page.close()
