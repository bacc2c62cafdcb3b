"""Both clocks count down in the browser, and a seat that runs out of time loses:
on a timed ladder, in a real headless Chromium (every wait bounded)."""

from __future__ import annotations

from typing import Any

import pytest
from web_pages import sign_in_as
from web_server import Api

pytestmark = pytest.mark.browser

CLOCK = {"kind": "real_time", "base_s": 8, "increment_s": 0, "no_show_s": 120}


def _ms(page: Any, seat: int) -> int:
    return int(page.get_attribute(f'.clock[data-seat="{seat}"]', "data-ms"))


def _running(page: Any) -> int:
    return int(page.get_attribute(".clock.running", "data-seat"))


def _counts_down(page: Any, seat: int) -> None:
    before = _ms(page, seat)
    page.wait_for_function(
        f"""() => {{ const c = document.querySelector('.clock[data-seat="{seat}"]');
                    return c && Number(c.dataset.ms) <= {before - 600}; }}""",
        timeout=10_000,
    )


def test_both_clocks_count_down_and_the_seat_that_runs_out_of_time_loses(
    browser: Any, api: Api, app_url: str
) -> None:
    ladder, match_id, (alice, bob) = api.alice_and_bob("Blitz", "duel", clock=CLOCK)
    players = {alice["id"]: alice, bob["id"]: bob}
    ladders = api.call("GET", "/api/ladders")
    assert [lad["clock"] for lad in ladders if lad["id"] == ladder] == [CLOCK]  # type: ignore[union-attr,index]

    def seat_to_move() -> tuple[int, dict[str, str]]:
        view = api.call("GET", f"/api/matches/{match_id}", alice["token"])
        seat = view["to_move"]  # type: ignore[index]
        return seat, players[view["seats"][seat]["player"]]  # type: ignore[index]

    for _ in range(2):  # each seat makes its first move: the main clocks start
        _, who = seat_to_move()
        api.call("POST", f"/api/matches/{match_id}/pass", who["token"], json={})

    # The page is the seat that moves next: it moves once more, then its opponent's
    # clock runs out and this page claims the win.
    first, winner = seat_to_move()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    name = "alice" if winner is alice else "bob"
    sign_in_as(context, winner["token"], winner["id"], name)
    page = context.new_page()
    try:
        page.goto(f"{app_url}/play/{match_id}")
        page.wait_for_selector("#clocks .clock", timeout=15_000)
        assert page.locator("#clocks .clock").count() == 2
        assert "8 s + 0 s" in page.inner_text("#time-control")
        assert _running(page) == first
        # The opponent has no page open: presence tells this player they left.
        page.wait_for_selector("#opponent-away", timeout=15_000)
        assert "clock keeps running" in page.inner_text("#opponent-away")
        _counts_down(page, first)
        # The running seat moves: its clock stops, the other one counts down.
        seat, who = seat_to_move()
        assert seat == first
        api.call("POST", f"/api/matches/{match_id}/pass", who["token"], json={})
        page.wait_for_function(
            f"() => document.querySelector('.clock.running')?.dataset.seat === '{1 - first}'",
            timeout=10_000,
        )
        stopped = _ms(page, first)
        _counts_down(page, 1 - first)
        assert _ms(page, first) == stopped, "a stopped clock does not move"
        page.wait_for_selector(".clock.short .clock-warn", timeout=15_000)
        # Nobody moves: the clock runs out, the opponent's page claims the win.
        page.wait_for_function(
            "() => /ran out of time/.test(document.querySelector('#status')?.textContent || '')",
            timeout=20_000,
        )
        view = api.call("GET", f"/api/matches/{match_id}")
        assert view["result"]["reason"] == "timeout"  # type: ignore[index]
        assert view["result"]["winner"] == first  # type: ignore[index]
    finally:
        context.close()
