"""The season archive page (/ladders/{id}/seasons) in a real headless Chromium:
an organiser schedules a season and ends it early from the page, everyone
then reads its frozen standings and a player's ratings in it."""

from __future__ import annotations

import hashlib
import os
import uuid
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from web_pages import sign_in_as
from web_server import Api

from schemas.events import MatchCreated, MatchEnded, encode_event
from schemas.rules import STANDARD

pytestmark = pytest.mark.browser


def finish(conn: psycopg.Connection, ladder_id: str, p0: str, p1: str, winner: int) -> None:
    """A finished match straight into the log (what the ratings read)."""
    match_id = f"m-{uuid.uuid4().hex[:12]}"
    seed = hashlib.sha256(match_id.encode()).hexdigest()
    events = [
        MatchCreated(
            match_id=match_id,
            players=(p0, p1),
            ruleset=STANDARD,
            first_dealer=0,
            seed_commitment="0" * 64,
            ladder_id=ladder_id,
        ),
        MatchEnded(winner=winner, reason="resigned", seed=seed),
    ]
    for version, event in enumerate(events, start=1):
        conn.execute(
            "INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash,"
            " hash) VALUES (%s, %s, %s, %s, 'system', now(), %s, %s)",
            (
                match_id,
                version,
                type(event).__struct_config__.tag,
                encode_event(event).decode(),
                bytes(32),
                bytes(32),
            ),
        )


def test_an_organiser_runs_a_season_from_its_page_and_everyone_reads_the_standings(
    browser: Any, api: Api, app_url: str, database_url: str, screenshots: Any
) -> None:
    from workers.ratings import apply_ladder

    ladder = api.ladder("Season ladder", "duel", rating_system="glicko2")
    alice, bob = api.register("alice"), api.register("bob")
    for p in (alice, bob):
        api.call("POST", f"/api/ladders/{ladder}/members", p["token"])
    admin = api.call("GET", "/api/me", api.admin_token)
    assert isinstance(admin, dict)

    ctx = browser.new_context()
    sign_in_as(ctx, api.admin_token, admin["id"], admin["name"])
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # the lobby links the page
    page.goto(app_url + "/")
    page.click(f'[data-ladder="{ladder}"] a[data-action="seasons"]')
    page.wait_for_selector("#no-seasons")
    assert page.url.endswith(f"/ladders/{ladder}/seasons")

    ends = (datetime.now() + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M")
    page.fill("#season-name", "Winter cup")
    page.fill("#season-ends", ends)
    page.fill("#season-reset", "0.5")
    page.click("#schedule-season button[type=submit]")
    page.wait_for_selector('section.season[data-phase="running"]')
    assert "Winter cup" in page.inner_text("section.season h2")

    with psycopg.connect(database_url, autocommit=True) as conn:
        for k in range(3):
            finish(conn, ladder, alice["id"], bob["id"], 0 if k < 2 else 1)
        apply_ladder(conn, ladder)
    page.reload()
    page.wait_for_selector("table.season-standings tbody tr")
    rows = page.locator("table.season-standings tbody tr")
    assert rows.count() == 2 and "alice" in rows.nth(0).inner_text()
    assert "±" in rows.nth(0).inner_text()  # Glicko-2: the 95 % interval

    page.click('button[data-action="end-season"]')
    page.wait_for_selector('section.season[data-phase="ended"]')
    with psycopg.connect(database_url, autocommit=True) as conn:
        apply_ladder(conn, ladder)  # the worker freezes the standings
    page.reload()
    page.wait_for_selector('section.season[data-phase="frozen"]')
    assert "Final standings" in page.inner_text("section.season")
    page.screenshot(path=str(screenshots / "seasons-organiser.png"), full_page=True)

    # anyone: the frozen standings and a player's ratings in the season, no controls
    anon = browser.new_context().new_page()
    anon.on("pageerror", lambda exc: errors.append(str(exc)))
    anon.goto(f"{app_url}/ladders/{ladder}/seasons")
    anon.wait_for_selector('section.season[data-phase="frozen"]')
    assert anon.locator("#schedule-season").count() == 0
    assert anon.locator('button[data-action="end-season"]').count() == 0
    anon.locator('button[data-action="season-history"]', has_text="bob").click()
    anon.wait_for_selector("ol.season-history li")
    items = anon.locator("ol.season-history li")
    assert items.count() == 3 and "against alice" in items.nth(0).inner_text()
    assert not errors, errors
    assert os.path.exists(screenshots / "seasons-organiser.png")
