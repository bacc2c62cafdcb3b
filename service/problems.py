"""A refusal as a problem+json body (RFC 9457): ``type``, ``title``, ``status``,
``detail``, ``instance``, plus our machine-readable ``code``.

The HTTP API answers with it (``service.api.errors``, the one table of
exception handlers) and a seat's live socket refuses a command with the very
same body (``service.live.commands``): ``problem_of`` is what both say for an
error. The ``detail`` of a ``MatchaError`` is the plain sentence the part that
raised it wrote; anything unexpected is a 500 ``internal_error`` whose details
stay in the server log.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import msgspec
import psycopg

from service.errors import MatchaError

log = logging.getLogger("matcha.api")

PROBLEM_JSON = "application/problem+json"
PROBLEM_BASE = "https://matcha.example/problems/"


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    type: str
    title: str
    status: int
    code: str
    detail: str
    instance: str
    errors: list[dict[str, Any]] | None = None
    """For ``validation_error``: which field is wrong, and why."""


def problem_of(exc: Exception, instance: str) -> Problem:
    """The problem+json body the API's table of handlers answers for ``exc`` on
    ``instance`` (``service.api.errors``), for a refusal that travels without an
    HTTP response (a command on a live socket: ``service.live.commands``)."""
    status, code, detail = 500, "internal_error", "The server failed; try again."
    if isinstance(exc, MatchaError):
        status, code, detail = exc.status, exc.code, exc.detail
    elif isinstance(exc, msgspec.DecodeError | msgspec.ValidationError):
        status, code, detail = 400, "validation_error", f"The request body is not valid: {exc}."
    elif isinstance(exc, RecursionError):  # msgspec's depth limit: the client's nesting
        status, code, detail = 400, "validation_error", "The request body is nested too deeply."
    elif isinstance(exc, psycopg.OperationalError):
        log.warning("database unavailable on %s: %s", instance, exc)
        status, code = 503, "database_unavailable"
        detail = "The database is not answering; retry shortly (with the same Idempotency-Key)."
    else:
        log.exception("unhandled error on %s", instance, exc_info=exc)
    return Problem(
        type=PROBLEM_BASE + code,
        title=HTTPStatus(status).phrase,
        status=status,
        code=code,
        detail=detail,
        instance=instance,
    )
