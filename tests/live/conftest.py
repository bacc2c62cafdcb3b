"""Fixtures of the live tests: the real app under uvicorn on this test's own
database and Redis prefix, an HTTP driver, and a store to read the truth."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from live_harness import Driver, serve_in_process, settings_for

from service.settings import Settings


@pytest.fixture(autouse=True)
def _quick_live(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short intervals, so a lost hint is noticed within a test's patience."""
    monkeypatch.setenv("MATCHA_LIVE_CHECK_S", "2")
    monkeypatch.setenv("MATCHA_LIVE_CHECK_DOWN_S", "0.5")
    monkeypatch.setenv("MATCHA_LIVE_HELLO_WAIT_S", "0.3")
    monkeypatch.setenv("MATCHA_LIVE_PRESENCE_DEBOUNCE_S", "0.05")


@pytest.fixture
def live_settings(database_url: str, redis_server_url: str, redis_prefix: str) -> Settings:
    return settings_for(database_url, redis_server_url, redis_prefix)


@pytest.fixture
async def server(live_settings: Settings) -> AsyncIterator[str]:
    async with serve_in_process(live_settings) as base:
        yield base


@pytest.fixture
async def driver(server: str) -> AsyncIterator[Driver]:
    async with httpx.AsyncClient(base_url=f"http://{server}", timeout=30) as client:
        yield Driver(client)
