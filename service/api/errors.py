"""The one table that maps every refusal to ``application/problem+json``.

Bodies follow RFC 9457: ``type``, ``title``, ``status``, ``detail``,
``instance``, plus our machine-readable ``code``. The ``detail`` of a
``MatchaError`` is a plain sentence written by the part that raised it (the
engine's rule errors never name a hidden card); anything unexpected becomes a
500 ``internal_error`` whose details stay in the server log.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import msgspec
import psycopg
import psycopg.errors
from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.types import ExceptionHandlersMap

from service.errors import MatchaError
from service.problems import PROBLEM_BASE, PROBLEM_JSON, Problem

log = logging.getLogger("matcha.api")


def problem_response(
    request: Request[Any, Any, Any],
    status: int,
    code: str,
    detail: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[Problem]:
    problem = Problem(
        type=PROBLEM_BASE + code,
        title=HTTPStatus(status).phrase,
        status=status,
        code=code,
        detail=detail,
        instance=request.url.path,
        errors=errors,
    )
    return Response(problem, status_code=status, media_type=PROBLEM_JSON, headers=headers)


RETRY_AFTER_S = 5
"""What a 503 (the job queue or a full live server) asks the client to wait."""


def _matcha_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    assert isinstance(exc, MatchaError)
    headers = {"Retry-After": str(RETRY_AFTER_S)} if exc.status == 503 else None
    return problem_response(request, exc.status, exc.code, exc.detail, headers=headers)


def _field_errors(extra: Any) -> list[dict[str, Any]]:
    """Litestar's validation extras, reduced to ``{field, message}`` pairs."""
    items = extra if isinstance(extra, list) else [extra] if extra else []
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, dict):
            out.append(
                {
                    "field": str(item.get("key") or item.get("field") or ""),
                    # Litestar names the source with its enum (ParamType.PATH): its value
                    "source": str(
                        getattr(item.get("source"), "value", item.get("source")) or "body"
                    ),
                    "message": str(item.get("message") or ""),
                }
            )
        else:
            out.append({"field": "", "source": "body", "message": str(item)})
    return out


NO_BODY = "This request needs a JSON body: send an object ({} when you set none of its fields)"


def _missing_body(error: dict[str, Any]) -> bool:
    """Litestar's words for a request without the body the route reads: the body
    parameter ``data`` missing (its message is the KeyError's, ``'data'``)."""
    return error["field"] == "data" and error["message"] in ("'data'", "")


def _validation_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    assert isinstance(exc, ValidationException)
    errors = _field_errors(exc.extra)
    if any(_missing_body(e) for e in errors):
        return problem_response(
            request,
            400,
            "validation_error",
            NO_BODY + ".",
            errors=[{"field": "", "source": "body", "message": NO_BODY}],
        )
    where = ", ".join(e["field"] for e in errors if e["field"])
    messages = "; ".join(e["message"] for e in errors if e["message"])
    detail = "The request is not valid"
    if where:
        detail += f" (field: {where})"
    if messages:
        detail += f": {messages}"
    elif exc.detail and exc.detail != HTTPStatus.BAD_REQUEST.phrase:
        detail += f": {exc.detail}"
    return problem_response(request, 400, "validation_error", detail + ".", errors=errors or None)


def _decode_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    return problem_response(
        request, 400, "validation_error", f"The request body is not valid: {exc}."
    )


def _not_authorized(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    detail = getattr(exc, "detail", "") or "A valid bearer token is required."
    return problem_response(
        request, 401, "unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="matcha"'}
    )


def _permission_denied(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    detail = getattr(exc, "detail", "") or "You may not do this."
    return problem_response(request, 403, "forbidden", detail)


def _not_found(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    return problem_response(request, 404, "not_found", "There is nothing at this address.")


_CODES_BY_STATUS = {
    400: "validation_error",  # litestar's own 400s: a body that is not JSON, a bad parameter
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
    503: "unavailable",
}


def _http_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    if status >= 500:
        log.error("HTTP %s on %s: %s", status, request.url.path, exc.detail)
        return problem_response(request, status, "internal_error", "The server failed; try again.")
    code = _CODES_BY_STATUS.get(status, "bad_request")
    detail = str(exc.detail or HTTPStatus(status).phrase)
    if code == "validation_error":
        detail = f"The request is not valid: {detail}."
    return problem_response(request, status, code, detail)


def _too_deep(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    if "deserializing" not in str(exc):  # msgspec's words: anything else is our bug
        return _internal_error(request, exc)
    return problem_response(
        request, 400, "validation_error", "The request body is nested too deeply."
    )


def _bad_text(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    # PostgreSQL text and JSONB cannot hold U+0000: psycopg refuses it before sending,
    # JSONB on the server (22P05). Either way nothing was written.
    if "NUL" not in str(exc) and not isinstance(exc, psycopg.errors.UntranslatableCharacter):
        return _internal_error(request, exc)
    return problem_response(
        request, 400, "validation_error", "Text may not contain the NUL character (\\u0000)."
    )


def _database_down(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    # The server restarts, fails over or refuses connections: not our bug, and not
    # the client's. A command may or may not have committed: the client retries it
    # with the same Idempotency-Key and gets the first result if it did.
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    return problem_response(
        request,
        503,
        "database_unavailable",
        "The database is not answering; retry shortly (with the same Idempotency-Key).",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


def _internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    # The trace goes to the log, never to the client: it may hold state.
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(request, 500, "internal_error", "The server failed; try again.")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    MatchaError: _matcha_error,
    ValidationException: _validation_error,
    msgspec.DecodeError: _decode_error,
    msgspec.ValidationError: _decode_error,
    NotAuthorizedException: _not_authorized,
    PermissionDeniedException: _permission_denied,
    NotFoundException: _not_found,
    HTTPException: _http_exception,
    RecursionError: _too_deep,
    psycopg.DataError: _bad_text,
    psycopg.OperationalError: _database_down,  # psycopg_pool.PoolTimeout too
    Exception: _internal_error,
}
"""Litestar picks the most specific class of the raised exception (MRO order)."""


__all__ = ["EXCEPTION_HANDLERS", "document_problems", "problem_response"]


_REFUSALS = {
    400: "The request is malformed or fails validation (`validation_error`).",
    401: "No token, or a token that is not known (`unauthorized`).",
    403: "The token's player may not do this (`forbidden`).",
    404: "Nothing at this address (`not_found`).",
    409: "A stale version, a repeated idempotency key with another body, or a clash "
    "(`version_conflict`, ...).",
    422: "A move the rules forbid (`not_your_turn`, `target_taken`, ...).",
}


def document_problems(handler: Any) -> None:
    """Tell the OpenAPI document that an HTTP operation may answer with a problem.

    Every refusal goes through this module, so every operation may give one; a
    client generated from the document then knows the problem+json shape.
    """
    from litestar.handlers import HTTPRouteHandler
    from litestar.openapi.datastructures import ResponseSpec

    if not isinstance(handler, HTTPRouteHandler) or not handler.include_in_schema:
        return
    given = dict(handler.responses or {})
    for status, description in _REFUSALS.items():
        given.setdefault(
            status,
            ResponseSpec(data_container=Problem, description=description, media_type=PROBLEM_JSON),
        )
    handler.responses = given
