"""The admins' fair-play page, /admin/flags, in a real browser: the open flags by
weight with people's names, a decision that needs a reason, and a flag gone
from the open list once dismissed; anyone else is told the page is for admins."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from test_web_every_page import _visit
from web_pages import serious_a11y_violations
from web_server import Api

from workers.projections import FlagsProjection, Runner

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
    runner = Runner(FlagsProjection(), database_url, stop=threading.Event(), sweep_at_start=False)
    runner.catch_up()
    runner.close()
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
    top = flags[0]["flag"]["flag_id"]
    page.click(f"#{top} button[type=submit]")  # no reason: the form refuses
    assert len(api.call("GET", "/api/admin/flags", api.admin_token)) == len(flags)  # type: ignore[arg-type]
    page.fill(f"#{top} textarea", "They are flatmates testing the client.")
    page.click(f"#{top} button[type=submit]")
    page.wait_for_selector(f"#{top}", state="detached")
    assert len(page.query_selector_all("section.flag")) == len(flags) - 1
    assert not errors, errors
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
