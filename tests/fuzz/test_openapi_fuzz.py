"""Schemathesis over every operation of the OpenAPI document (issue 23).

As each of anonymous, a player, an organiser and an admin: every operation with
generated parameters and bodies (path parameters half the time the ids of the
world's real ladder, match, tournament and player), then the stateful phase,
which follows the document's links from what it creates (players, ladders,
matches, challenges, tournaments, seasons) to what they name. Every answer must
be no 5xx (``not_a_server_error``) and conform to its schema
(``response_schema_conformance``); the document itself must validate.

Streams (Server-Sent Events) never end by themselves: they are opened, their
status and content type checked, and closed.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
import schemathesis
from fuzz_world import EXAMPLES, STATEFUL_RUNS, STATEFUL_STEPS, World
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

pytestmark = pytest.mark.slow

ROLES = ("anonymous", "player", "organiser", "admin")
CHECKS = [not_a_server_error, response_schema_conformance]
STREAMS = {"streamMatchEvents", "streamMatchEvents_2", "streamLobby", "tournamentStandingsStream"}


def _schema(world: World) -> Any:
    return schemathesis.openapi.from_url(f"{world.base}/schema/openapi.json")


def _headers(world: World, role: str) -> dict[str, str]:
    token = world.tokens[role]
    return {"Authorization": f"Bearer {token}"} if token else {}


def test_the_openapi_document_validates_and_every_operation_loads(world: World) -> None:
    schema = _schema(world)
    schema.validate()  # raises on a document that is not valid OpenAPI 3.1
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 60
    links = sum(
        len(response.get("links", {}))
        for item in schema.raw_schema["paths"].values()
        for op in item.values()
        if isinstance(op, dict)
        for response in op.get("responses", {}).values()
    )
    assert links > 50, "the document links what it creates to what it names"


def _open_stream(
    world: World, session: requests.Session, headers: dict[str, str], case: Any
) -> requests.Response:
    """Open a Server-Sent Events stream as the case asks, check its answer, close it."""
    with session.get(
        world.base + case.formatted_path,
        params=case.query,
        headers={**headers, **(case.headers or {})},
        stream=True,
        timeout=10,
    ) as answer:
        assert answer.status_code < 500, (case.formatted_path, answer.status_code)
        if answer.status_code == 200:
            assert answer.headers["content-type"].startswith("text/event-stream")
        return answer


def _operations(world: World) -> list[Any]:
    return [result.ok() for result in _schema(world).get_all_operations()]


@pytest.mark.parametrize("role", ROLES)
def test_no_operation_answers_a_5xx_or_off_its_schema(world: World, role: str) -> None:
    session = requests.Session()
    headers = _headers(world, role)
    failures: list[str] = []
    for operation in _operations(world):
        names = {p.name for p in operation.path_parameters}
        known = {k: v for k, v in world.ids.items() if k in names}
        strategy = operation.as_strategy()
        if known:
            strategy = st.one_of(strategy, operation.as_strategy(path_parameters=known))

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy)
        def fuzz(case: Any) -> None:
            if case.operation.definition.raw.get("operationId") in STREAMS:
                _open_stream(world, session, headers, case)
                return
            case.call_and_validate(
                base_url=world.base, session=session, headers=headers, checks=CHECKS, timeout=30
            )

        try:
            fuzz()
        except Exception as failure:  # collect them all: one run names every bad operation
            failures.append(f"{operation.label}: {str(failure)[:600]}")
    assert failures == [], "\n\n".join(failures)


@pytest.mark.parametrize("role", ROLES)
def test_the_stateful_phase_follows_links_without_a_5xx_or_an_answer_off_its_schema(
    world: World, role: str
) -> None:
    schema = _schema(world)
    headers = _headers(world, role)
    session = requests.Session()

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": world.base, "headers": headers, "session": session, "timeout": 30}

        def step(self, input: Any) -> Any:
            if input.case.operation.definition.raw.get("operationId") in STREAMS:
                _open_stream(world, session, headers, input.case)
                return None  # a stream links nowhere
            return super().step(input)

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

    Machine.run(
        settings=settings(
            max_examples=STATEFUL_RUNS,
            stateful_step_count=STATEFUL_STEPS,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
