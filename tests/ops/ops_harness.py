"""Helpers of the ops tests: a small Litestar app carrying only the ops plugin,
so health, metrics and logs are tested on their own against real servers."""

from __future__ import annotations

import io
import json
from typing import Any

from litestar import Litestar

from service.ops import OpsPlugin
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings


def ops_app(database_url: str, redis_url: str, prefix: str = "matcha", **routes: Any) -> Litestar:
    """An app with the ops routes and middleware; the checks connect from the settings."""
    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False),
        redis=RedisSettings(url=redis_url, prefix=prefix),
        api=ApiSettings(),
    )
    app = Litestar(route_handlers=list(routes.values()), plugins=[OpsPlugin()])
    app.state.settings = settings
    return app


class LogLines:
    """What the JSON formatter wrote, one parsed object per line."""

    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    def all(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines() if line]
