"""An address that is no page: a browser gets the site's own 404 page (its header,
navigation and "No such page"), an API client keeps problem+json."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from web_server import Api

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize("path", ["/no/such/page", "/tournament", "/players/x"])
def test_given_a_browser_when_it_opens_an_unknown_address_then_it_gets_an_html_404_page(
    api: Api, path: str
) -> None:
    answer = httpx.get(api.base + path, headers={"Accept": BROWSER_ACCEPT}, timeout=10)
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert '<header class="top">' in answer.text and 'id="site-nav"' in answer.text


@pytest.mark.parametrize(
    ("path", "accept"),
    [
        ("/no/such/page", "application/json"),
        ("/no/such/page", "*/*"),  # curl's
        ("/api/no-such-route", BROWSER_ACCEPT),
        ("/static/no-such-module.js", BROWSER_ACCEPT),
    ],
)
def test_given_an_api_client_or_an_api_address_then_a_404_stays_problem_json(
    api: Api, path: str, accept: str
) -> None:
    answer = httpx.get(api.base + path, headers={"Accept": accept}, timeout=10)
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["code"] == "not_found"


@pytest.mark.browser
def test_in_chromium_an_unknown_address_shows_no_such_page_with_the_sites_header(
    browser: Any, app_url: str
) -> None:
    page = browser.new_page()
    opened = page.goto(app_url + "/no/such/page")
    assert opened is not None and opened.status == 404
    page.wait_for_selector("h1")
    assert page.inner_text("h1") == "No such page"
    assert page.query_selector("#site-nav a[href='/']") is not None
    assert page.title() == "Not found · Matcha"
    page.close()
