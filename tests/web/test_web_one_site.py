"""One site: every page has the same header, theme and navigation, and none is wider
than the screen, at 1280x800 and 390x844 (screenshots of each in
tests/artifacts/screenshots/site-*.png); the organiser's form is for organisers only
and shows one format's fields at a time. In a real headless Chromium.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_web_every_page import site  # noqa: F401  (the fixture: matches, a dispute)
from web_pages import VIEWPORTS, sign_in_as
from web_server import Api

pytestmark = pytest.mark.browser

HEADER_JS = """() => {
  const top = document.querySelector('header.top');
  const nav = [...document.querySelectorAll('#site-nav a')].map(a => a.getAttribute('href'));
  return {
    brand: !!document.querySelector('header.top a.brand[href="/"]'),
    nav,
    account: (document.querySelector('#account') || {}).innerText,
    signOut: !!document.querySelector('#account button'),
    style: [...document.styleSheets].some(s => (s.href || '').endsWith('/static/style.css')),
    background: top ? getComputedStyle(top).backgroundColor : null,
    font: getComputedStyle(document.body).fontFamily,
    width: document.documentElement.scrollWidth,
  };
}"""


def _make_organiser(api: Api, player_id: str) -> None:
    api.call(
        "POST", f"/api/admin/players/{player_id}/roles", api.admin_token,
        json={"roles": ["organiser"]},
    )  # fmt: skip


@pytest.fixture
def pages(api: Api, site: dict[str, Any]) -> list[tuple[str, str, dict[str, str] | None, str]]:  # noqa: F811
    """(name, address, who is signed in, what shows the page is drawn) for every page."""
    alice, bob = {**site["alice"], "name": "alice"}, {**site["bob"], "name": "bob"}
    admin = api.call("GET", "/api/me", api.admin_token)
    assert isinstance(admin, dict)
    root = {"token": api.admin_token, "id": admin["id"], "name": admin["name"]}
    made = api.call(
        "POST", "/api/tournaments", api.admin_token,
        json={"name": "Spring Swiss", "ladder_id": site["ladder"],
              "format": {"type": "swiss", "rounds": 3},
              "tiebreaks": ["buchholz_cut1", "buchholz", "sonneborn_berger", "direct_encounter"]},
    )  # fmt: skip
    assert isinstance(made, dict)
    first = site["finished"][0]
    return [
        ("lobby", "/", alice, "#practice-link"),
        ("play", f"/play/{site['live']}", bob, ".table"),
        ("watch", f"/watch/{site['live']}", None, ".table"),
        ("replay", f"/replay/{first}", None, ".table"),
        ("player", f"/player/{alice['id']}", None, "svg.history"),
        ("admin", "/admin", root, "#queue"),
        ("admin-match", f"/admin/matches/{first}", root, "#verdict"),
        ("practice", "/practice", alice, "#practice-level option"),
        ("tournaments", "/tournaments", root, "#create-tournament"),
        ("tournament", f"/tournaments/{made['id']}", alice, "#standings"),
        ("seasons", f"/ladders/{site['ladder']}/seasons", alice, "h1"),
        ("not-found", "/no/such/page", None, "h1"),
    ]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_every_page_has_the_sites_one_header_and_none_is_wider_than_the_screen(
    browser: Any,
    app_url: str,
    pages: list[tuple[str, str, dict[str, str] | None, str]],
    screenshots: Path,
    size: str,
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    for name, path, who, ready in pages:
        ctx = browser.new_context(viewport=VIEWPORTS[size])
        if who is not None:
            sign_in_as(ctx, who["token"], who["id"], who["name"])
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc, into=errors: into.append(str(exc)))
        page.goto(app_url + path)
        page.wait_for_selector(ready, state="attached", timeout=20_000)
        page.wait_for_selector("#site-nav a", timeout=10_000)
        page.screenshot(path=str(screenshots / f"site-{name}-{size}.png"), full_page=True)
        seen[name] = page.evaluate(HEADER_JS)
        seen[name]["errors"] = errors
        seen[name]["signed_in"] = who is not None
        ctx.close()

    lobby = seen["lobby"]
    for name, got in seen.items():
        assert got["brand"] and got["style"], (name, got)
        assert got["nav"][:2] == ["/", "/tournaments"], (name, got["nav"])
        assert (got["background"], got["font"]) == (lobby["background"], lobby["font"]), name
        assert got["signOut"] == got["signed_in"], (name, got["account"])  # and its sign-out
        assert got["width"] <= VIEWPORTS[size]["width"], f"{name} is {got['width']} px wide"
        assert not got["errors"], (name, got["errors"])


def test_the_organisers_form_is_for_organisers_and_shows_one_formats_fields_at_a_time(
    browser: Any, api: Api, app_url: str, screenshots: Path
) -> None:
    api.ladder("Form ladder", "duel")
    player, organiser = api.register("plain"), api.register("sen")
    _make_organiser(api, organiser["id"])

    ctx = browser.new_context(viewport=VIEWPORTS["phone"])
    sign_in_as(ctx, player["token"], player["id"], "plain")
    page = ctx.new_page()
    page.goto(app_url + "/tournaments")
    page.wait_for_selector("#organise-note")
    assert page.query_selector("#create-tournament") is None
    ctx.close()

    ctx = browser.new_context(viewport=VIEWPORTS["phone"])
    sign_in_as(ctx, organiser["token"], organiser["id"], "sen")
    page = ctx.new_page()
    page.goto(app_url + "/tournaments")
    page.wait_for_selector("#create-tournament")
    fields = ["#t-rounds", "#t-bye", "#t-cycles", "#t-minutes"]

    def visible() -> list[str]:
        return [f for f in fields if page.is_visible(f)]

    assert visible() == ["#t-rounds", "#t-bye"]  # Swiss, the first format
    page.select_option("#t-format", "round_robin")
    assert visible() == ["#t-cycles"]
    page.select_option("#t-format", "arena")
    assert visible() == ["#t-minutes"]
    page.screenshot(path=str(screenshots / "site-organiser-form-phone.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORTS["phone"]["width"]
    ctx.close()
