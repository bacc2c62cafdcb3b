"""Fixtures of the browser tests: the app under uvicorn, Debian's Chromium via Playwright."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_server import Api, running_app

CHROMIUM = Path(os.environ.get("MATCHA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set MATCHA_CHROMIUM)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def api(database_url: str, redis_server_url: str, redis_prefix: str) -> Iterator[Api]:
    """The app under uvicorn, and an HTTP client of it that knows its admin token."""
    with running_app(database_url, redis_server_url, redis_prefix) as client:
        yield client


@pytest.fixture
def app_url(api: Api) -> str:
    return api.base


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
