"""The fair-play pages in a real browser: /admin/flags lists the open flags by
weight with people's names, refuses a decision without a reason and drops a
dismissed flag; after a closure the victim's player page shows the refund and
the closed account's says so; anyone but an admin is told the page is theirs."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from test_web_every_page import _visit
from web_pages import serious_a11y_violations
from web_server import Api

from workers.projections import FlagsProjection, RatingsProjection, Runner


def catch_up(database_url: str) -> None:
    """The worker's ratings and flags runners, one catch-up each."""
    for projection in (RatingsProjection(database_url), FlagsProjection()):
        runner = Runner(projection, database_url, stop=threading.Event(), sweep_at_start=False)
        try:
            runner.catch_up()
        finally:
            runner.close()


THRESHOLDS = {"min_pair_games": 5, "min_early_ends": 5, "rating_from_one": 100.0}


def test_given_a_win_trading_pair_the_admin_page_lists_its_flags_and_dismisses_one_with_a_reason(
    browser: Any, api: Api, app_url: str, database_url: str, screenshots: Path
) -> None:
    zoe, yan = api.register("zoe"), api.register("yan")
    ladder_id = api.ladder("trading floor")
    api.call("PUT", f"/api/ladders/{ladder_id}/fairplay", api.admin_token, json=THRESHOLDS)
    for _ in range(6):
        match_id = api.start_match(ladder_id, [zoe["token"], yan["token"]], [zoe["id"], yan["id"]])
        api.call("POST", f"/api/matches/{match_id}/resign", yan["token"], json={})
    catch_up(database_url)
    flags = api.call("GET", "/api/admin/flags", api.admin_token)
    assert isinstance(flags, list) and flags
    admin = api.call("GET", "/api/me", api.admin_token)
    assert isinstance(admin, dict)
    who = {"token": api.admin_token, "id": admin["id"], "name": admin["name"]}

    page, errors = _visit(
        browser, f"{app_url}/admin/flags", "desktop", screenshots, "flags", who, ".flag"
    )
    sections = page.query_selector_all("section.flag")
    assert len(sections) == len(flags)
    first = sections[0].inner_text()
    assert "zoe vs yan" in first and zoe["id"] not in first
    assert not serious_a11y_violations(page), serious_a11y_violations(page)
    top = next(f for f in flags if f["flag"]["signal"] == "pair_share")["flag"]["flag_id"]
    page.click(f"#{top} button[type=submit]")  # no reason: the form refuses
    assert len(api.call("GET", "/api/admin/flags", api.admin_token)) == len(flags)  # type: ignore[arg-type]
    page.fill(f"#{top} textarea", "They are flatmates testing the client.")
    page.click(f"#{top} button[type=submit]")
    page.wait_for_selector(f"#{top}", state="detached")
    assert len(page.query_selector_all("section.flag")) == len(flags) - 1
    assert not errors, errors
    page.context.close()

    # the admin closes zoe from her early-ends flag: vic, whom she beat, is refunded
    vic, hon = api.register("vic"), api.register("hon")
    for winner, loser in ((vic, hon), (zoe, vic), (zoe, vic)):
        match_id = api.start_match(
            ladder_id, [winner["token"], loser["token"]], [winner["id"], loser["id"]]
        )
        api.call("POST", f"/api/matches/{match_id}/resign", loser["token"], json={})
    catch_up(database_url)
    early = next(f for f in flags if f["flag"]["signal"] == "early_ends")
    body = {"action": "close", "reason": "fed by yan's resignations"}
    api.call(
        "POST", f"/api/admin/flags/{early['flag']['flag_id']}/decision", api.admin_token, json=body
    )
    catch_up(database_url)
    page, _ = _visit(
        browser,
        f"{app_url}/player/{vic['id']}",
        "desktop",
        screenshots,
        "refund",
        None,
        ".refunds li",
    )
    assert "refund: opponent closed for fair play" in page.inner_text(".refunds")
    assert not serious_a11y_violations(page), serious_a11y_violations(page)
    page.context.close()
    page, _ = _visit(
        browser, f"{app_url}/player/{zoe['id']}", "desktop", screenshots, "closed", None, "#closed"
    )
    assert page.inner_text("#closed") == "closed for fair play"
    page.context.close()

    page, _ = _visit(
        browser,
        f"{app_url}/admin/flags",
        "phone",
        screenshots,
        "flags-player",
        {"token": zoe["token"], "id": zoe["id"], "name": "zoe"},
        "#not-admin",
    )
    assert "only for administrators" in page.inner_text("#not-admin")
    page.context.close()
