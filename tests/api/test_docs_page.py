"""The API docs page loads nothing from outside the service (service/api/docs_assets.py)."""

from __future__ import annotations

import re

import pytest
from api_harness import Api

pytestmark = pytest.mark.anyio


async def test_swagger_ui_is_served_with_its_own_assets_and_no_outside_address(api: Api) -> None:
    page = await api.client.get("/schema/swagger")
    assert page.status_code == 200
    html = page.text
    # Every address the page loads (script src, link href) is the service's own.
    loaded = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    assert loaded, html[:500]
    assert all(url.startswith(("/schema/assets/", "data:")) for url in loaded), loaded
    for url in loaded:
        if url.startswith("data:"):
            continue
        asset = await api.client.get(url)
        assert asset.status_code == 200, url
        kind = "text/css" if url.endswith(".css") else "javascript"
        assert kind in asset.headers["content-type"], (url, asset.headers["content-type"])
        assert len(asset.content) > 10_000, url  # the real file, not a stub
