"""The API docs page (Swagger UI at ``/schema/swagger``) with its assets served
by the service itself, so the page works offline like the web client.

Litestar's ``SwaggerRenderPlugin`` loads Swagger UI from a CDN by default. The
files come instead from the ``swagger-ui-py`` wheel (it ships Swagger UI's
``dist`` folder, 5.x, which reads OpenAPI 3.1 as Litestar writes it): three of
them are served under ``/schema/assets/``. The package is only located, never
imported (its own Python code is for other frameworks).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Final

from litestar import Router
from litestar.datastructures import CacheControlHeader
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.static_files import create_static_files_router

ASSETS_PATH: Final = "/schema/assets"
ASSET_FILES: Final = ("swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css")


def swagger_ui_dir() -> Path:
    """The folder of Swagger UI's files inside the installed ``swagger-ui-py`` wheel."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("swagger-ui-py is not installed (pip install -e .)")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def swagger_plugin() -> SwaggerRenderPlugin:
    """Swagger UI at ``/schema/swagger`` from local files, with no CDN favicon either."""
    return SwaggerRenderPlugin(
        path="/swagger",
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon="<link rel='icon' href='data:,'>",
    )


ROUTES: Final = [
    Router(
        path="/",
        route_handlers=[
            create_static_files_router(
                path=ASSETS_PATH,
                directories=[swagger_ui_dir()],
                # versioned with the installed package: a day's caching is safe
                cache_control=CacheControlHeader(max_age=86_400, public=True),
                include_in_schema=False,
                name="swagger-assets",
            )
        ],
        include_in_schema=False,
        security=[],
    )
]
"""Mounted through ``service.app.ROUTES``."""
