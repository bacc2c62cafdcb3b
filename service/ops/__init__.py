"""Operations: health and readiness, Prometheus metrics, structured logs.

Mounted on the API by `OpsPlugin` (listed in `service.app.PLUGINS`):
`install_ops(app_config)` adds the `/healthz`, `/readyz` and `/metrics` routes,
the request-id middleware (outermost, so every line of a request carries its
id) and JSON logging, and attaches the bounded stop to uvicorn's signal handling
(`stopping.py`).
"""

from __future__ import annotations

from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol

from service.ops.health import ops_router
from service.ops.logging import (
    RequestContextMiddleware,
    litestar_logging_config,
    route_uvicorn_to_root,
)
from service.ops.stopping import attach_to_uvicorn

ROUTES = [ops_router]


def install_ops(app_config: AppConfig) -> AppConfig:
    app_config.logging_config = litestar_logging_config()
    app_config.route_handlers.append(ops_router)
    app_config.middleware.insert(0, RequestContextMiddleware)
    # `uvicorn.run(app)` configures its loggers after the app is built: redo ours at start
    app_config.on_startup.append(route_uvicorn_to_root)
    # SIGTERM ends the live streams at once and the process within 10 s (stopping.py)
    app_config.on_startup.append(attach_to_uvicorn)
    return app_config


class OpsPlugin(InitPluginProtocol):
    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        return install_ops(app_config)
