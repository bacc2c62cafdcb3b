"""Structured logs: one JSON object per line, with the request, match and player in context.

Every line carries `time`, `level`, `logger`, `message`, and `request_id`,
`match_id`, `player` when known, plus any `extra={...}` fields. The request id
comes from the `X-Request-ID` header (a proxy's), or is generated, and is sent
back in the response header, so a user's report and the proxy, API and worker
logs meet on one id. The API sets the match and player with `set_match_id()` /
`set_player()` as soon as it knows them.

`MATCHA_LOG_FORMAT` = `json` (default) or `text`; `MATCHA_LOG_LEVEL` (INFO).
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from litestar.types import ASGIApp, Message, Receive, Scope, Send

_Var = contextvars.ContextVar
request_id_var: _Var[str | None] = contextvars.ContextVar("request_id", default=None)
match_id_var: _Var[str | None] = contextvars.ContextVar("match_id", default=None)
player_var: _Var[str | None] = contextvars.ContextVar("player", default=None)

REQUEST_ID_HEADER = "x-request-id"
_MAX_INCOMING_ID = 128  # a longer (or odd) incoming id is replaced, never echoed into logs

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn adds a coloured copy of the message
}
_QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
_MATCH_IN_PATH = re.compile(r"^/api/(?:admin/)?matches/([^/]{1,64})(?:/|$)")

access_log = logging.getLogger("matcha.access")


def set_match_id(match_id: object) -> None:
    match_id_var.set(None if match_id is None else str(match_id))


def set_player(player: object) -> None:
    player_var.set(None if player is None else str(player))


def current_request_id() -> str | None:
    return request_id_var.get()


_CONTEXT = (("request_id", request_id_var), ("match_id", match_id_var), ("player", player_var))


_SECRET = re.compile(
    r"(?i)(\b(?:token|access_token|admin_token)=)[^&\s\"'<>]+|(\bbearer\s+)[\w.~+/=-]+"
)
"""A bearer token in a query string (a WebSocket or SSE ``?token=``, which uvicorn logs
with the path) or in an ``Authorization: Bearer`` value quoted in a message."""

REDACTED = "[redacted]"


def redact_secrets(text: str) -> str:
    """``text`` with every bearer token in it replaced by ``[redacted]``."""
    return _SECRET.sub(lambda m: (m.group(1) or m.group(2)) + REDACTED, text)


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a malformed record: leave it to the handler's own error path
        return
    clean = redact_secrets(message)
    if clean != message:
        record.msg, record.args = clean, None


def _install_record_factory() -> None:
    """Stamp the request, match and player on each record where it is created, and
    take every bearer token out of its message (docs/operations.md "Logs": no
    secret is ever written, whichever library logs it).

    Records may be formatted later in another thread (Litestar logs through a
    queue listener), where these context variables no longer hold: so they are
    copied onto the record by the thread that logs. Idempotent.
    """
    previous = logging.getLogRecordFactory()
    if getattr(previous, "_matcha_context", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _redact_record(record)
        for key, var in _CONTEXT:
            value = var.get()
            if value is not None and not hasattr(record, key):
                setattr(record, key, value)
        return record

    factory._matcha_context = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, var in _CONTEXT:
            value = getattr(record, key, None) or var.get()
            if value is not None:
                line[key] = value
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_") and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


_HANDLER_MARK = "_matcha_ops_handler"
_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _wants_json(fmt: str | None) -> bool:
    return (fmt or os.environ.get("MATCHA_LOG_FORMAT", "json")).lower() == "json"


def _level(level: str | None) -> str:
    return (level or os.environ.get("MATCHA_LOG_LEVEL", "INFO")).upper()


def configure_logging(fmt: str | None = None, level: str | None = None) -> None:
    """Send the root logger (and uvicorn's) to stderr as JSON lines. Idempotent.

    For processes without Litestar (the worker, scripts); the API gets the same
    through `litestar_logging_config()`.
    """
    _install_record_factory()
    route_uvicorn_to_root()
    root = logging.getLogger()
    root.setLevel(_level(level))
    if any(getattr(h, _HANDLER_MARK, False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    setattr(handler, _HANDLER_MARK, True)
    handler.setFormatter(JsonFormatter() if _wants_json(fmt) else logging.Formatter(_TEXT_FORMAT))
    root.addHandler(handler)


def litestar_logging_config(fmt: str | None = None, level: str | None = None) -> Any:
    """Litestar's own logging set-up (root through its queue listener), printing JSON."""
    from litestar.logging.config import LoggingConfig

    _install_record_factory()
    formatter: dict[str, Any] = (
        {"()": JsonFormatter} if _wants_json(fmt) else {"format": _TEXT_FORMAT}
    )
    return LoggingConfig(
        formatters={"standard": formatter},
        root={"handlers": ["queue_listener"], "level": _level(level)},
        # The API's own handler (service.api.errors) logs each unhandled error once,
        # with its traceback and request; Litestar logging it too doubled every 500
        # and gave each refused request (4xx) a traceback as if it were a crash.
        log_exceptions="debug",
        disable_stack_trace=set(range(400, 500)),
    )


def route_uvicorn_to_root() -> None:
    """uvicorn installs its own text handlers (again when `uvicorn.run` starts): undo that.

    Its access lines stay off: `RequestContextMiddleware` writes one per request,
    with the request id, match and timing.
    """
    for name in ("uvicorn", "uvicorn.error"):
        uv = logging.getLogger(name)
        uv.handlers.clear()
        uv.propagate = True
    access = logging.getLogger("uvicorn.access")
    access.handlers.clear()
    access.propagate = False


def uvicorn_log_config(fmt: str | None = None, level: str | None = None) -> dict[str, Any]:
    """A `logging.config.dictConfig` for `uvicorn --log-config`: JSON from its first line."""
    _install_record_factory()
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.JsonFormatter"} if _wants_json(fmt) else {"format": _TEXT_FORMAT}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": _level(level)},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": False},
        },
    }


def _incoming_request_id(scope: Scope) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == b"x-request-id":
            candidate = value.decode("latin-1").strip()
            well_formed = candidate.isprintable() and '"' not in candidate
            if 0 < len(candidate) <= _MAX_INCOMING_ID and well_formed:
                return candidate
    return None


class RequestContextMiddleware:
    """Gives each request an id (context var + response header) and logs one access line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = _incoming_request_id(scope) or uuid.uuid4().hex
        # The match is known from the path already; the API names the player once it knows.
        in_path = _MATCH_IN_PATH.match(scope.get("path", ""))
        tokens = (
            request_id_var.set(request_id),
            match_id_var.set(in_path.group(1) if in_path else None),
            player_var.set(None),
        )
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [
                    (k, v) for k, v in message.get("headers", ()) if k.lower() != b"x-request-id"
                ]
                headers.append((b"x-request-id", request_id.encode("latin-1")))
                message = {**message, "headers": headers}
            elif message["type"] == "websocket.accept":
                headers = list(message.get("headers") or ())
                headers.append((b"x-request-id", request_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            path = scope.get("path", "")
            level = logging.DEBUG if path in _QUIET_PATHS else logging.INFO
            if access_log.isEnabledFor(level):
                method = scope.get("method", "WS")
                access_log.log(
                    level,
                    "%s %s %s",
                    method,
                    path,
                    status or "-",
                    extra={
                        "method": method,
                        "path": path,
                        "status": status,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                    },
                )
            for var, token in zip((request_id_var, match_id_var, player_var), tokens, strict=True):
                var.reset(token)
