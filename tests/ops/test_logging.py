"""Structured logs: one JSON object per line, carrying the request, match and player."""

from __future__ import annotations

import logging
import re

import pytest
from litestar import get
from litestar.params import FromPath
from litestar.testing import AsyncTestClient

from service.ops.logging import JsonFormatter, set_match_id, set_player

from .ops_harness import LogLines, ops_app

log = logging.getLogger("matcha.tests.ops")


@get("/api/matches/{match_id:str}/probe")
async def probe(match_id: FromPath[str]) -> dict[str, str]:
    """Stands in for an API handler: it learns the match and the player, then logs."""
    set_match_id(match_id)
    set_player("ada")
    log.info("probed the match", extra={"seat": 1})
    return {"match_id": match_id}


def test_a_record_becomes_one_json_object_with_its_extra_fields() -> None:
    record = logging.LogRecord("matcha.x", logging.WARNING, __file__, 1, "tea %s", ("ready",), None)
    record.round = 3
    line = JsonFormatter().format(record)
    assert "\n" not in line
    import json

    parsed = json.loads(line)
    assert parsed["level"] == "warning"
    assert parsed["logger"] == "matcha.x"
    assert parsed["message"] == "tea ready"
    assert parsed["round"] == 3
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", parsed["time"])
    assert "request_id" not in parsed  # outside a request there is none


@pytest.mark.anyio
async def test_an_incoming_request_id_is_kept_and_lands_on_every_line(json_logs: LogLines) -> None:
    app = ops_app("postgresql://unused", "", probe=probe)
    async with AsyncTestClient(app) as client:
        response = await client.get("/api/matches/m-42/probe", headers={"X-Request-ID": "req-abc"})
    assert response.status_code == 200
    assert response.headers["x-request-id"] == "req-abc"
    lines = json_logs.all()
    handler_line = next(line for line in lines if line["message"] == "probed the match")
    assert handler_line["request_id"] == "req-abc"
    assert handler_line["match_id"] == "m-42"
    assert handler_line["player"] == "ada"
    assert handler_line["seat"] == 1
    access = next(line for line in lines if line["logger"] == "matcha.access")
    assert access["request_id"] == "req-abc"
    assert access["match_id"] == "m-42"  # the access line knows what the handler learnt
    assert access["status"] == 200
    assert access["path"] == "/api/matches/m-42/probe"
    assert access["duration_ms"] >= 0


@pytest.mark.anyio
async def test_a_request_without_an_id_gets_a_fresh_one_and_ids_never_leak(
    json_logs: LogLines,
) -> None:
    app = ops_app("postgresql://unused", "", probe=probe)
    async with AsyncTestClient(app) as client:
        first = await client.get("/api/matches/m-1/probe")
        second = await client.get("/api/matches/m-2/probe", headers={"X-Request-ID": "x" * 500})
    first_id = first.headers["x-request-id"]
    second_id = second.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", first_id)
    assert re.fullmatch(r"[0-9a-f]{32}", second_id), "an oversized id is replaced, not echoed"
    assert first_id != second_id
    probes = [line for line in json_logs.all() if line["message"] == "probed the match"]
    assert [(p["request_id"], p["match_id"]) for p in probes] == [
        (first_id, "m-1"),
        (second_id, "m-2"),
    ]


@pytest.mark.anyio
async def test_a_crash_is_logged_once_with_its_traceback_and_a_refusal_is_not(
    json_logs: LogLines,
) -> None:
    from litestar import Litestar, post

    from service.api.errors import EXCEPTION_HANDLERS
    from service.errors import NotFound, RuleError
    from service.ops.logging import litestar_logging_config

    @get("/refused/{kind:str}")
    async def refused(kind: str) -> None:
        raise (
            NotFound("No match has this id.")
            if kind == "missing"
            else RuleError("not_your_turn", "It is not your turn.")
        )

    @post("/body")
    async def body(data: dict[str, int]) -> None:
        return None

    @get("/crash")
    async def crash() -> None:
        raise RuntimeError("a real bug")

    litestar_logged: list[str] = []
    config = litestar_logging_config()
    config.exception_logging_handler = lambda logger, scope, tb: litestar_logged.append(
        scope["path"]
    )
    app = Litestar(
        [refused, body, crash], logging_config=config, exception_handlers=EXCEPTION_HANDLERS
    )
    async with AsyncTestClient(app) as client:
        assert (await client.get("/refused/missing")).status_code == 404
        assert (await client.get("/refused/turn")).status_code == 422
        assert (await client.post("/body", content=b"{not json")).status_code == 400
        assert (await client.post("/body", content=b"[" * 100_000)).status_code == 400
        assert (await client.get("/crash")).status_code == 500
    errors = [line for line in json_logs.all() if line["level"] == "error"]
    assert [e["message"] for e in errors] == ["unhandled error on GET /crash"]
    assert "RuntimeError: a real bug" in errors[0]["exception"]
    assert litestar_logged == []  # not a second time by Litestar
