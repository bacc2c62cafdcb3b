"""Every integer bounded at the edge, every nested body struct strict (issue 23).

The walks read the app itself (its route table and its OpenAPI document, never a
hand list), so a route or a field added tomorrow without bounds fails here: each
integer a client may send in a path, a query or a body (socket messages too)
has both a lower and an upper bound that fit where it is stored
(``schemas/bounds.py``), and every struct of every body refuses unknown fields.
Out of range is a 400 problem that names the field, and the log is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec.inspect as mi
import pytest
from api_harness import Api, assert_problem, events_rows
from litestar import Litestar
from litestar.handlers import HTTPRouteHandler

from schemas.bounds import INT32_MAX
from service.app import create_app
from service.live.wire import ClientMessage

pytestmark = pytest.mark.anyio

BIG = (2**31, 2**63, 10**30)
"""What the issue sent: past a PostgreSQL integer, past a bigint, past any C integer."""


def _openapi() -> dict[str, Any]:
    doc: dict[str, Any] = create_app().openapi_schema.to_schema()
    return doc


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "responses" in op:
                yield method.upper(), path, op


def _unbounded(
    schema: dict[str, Any],
    where: str,
    components: dict[str, Any],
    inherited: dict[str, Any] | None = None,
    seen: frozenset[str] = frozenset(),
) -> Iterator[str]:
    """Every integer in ``schema`` without both bounds (a wrapper's bounds apply to
    its branches, as in JSON Schema; an ``enum`` is bounded)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            yield from _unbounded(components[name], where, components, None, seen | {name})
        return
    bounds = {**(inherited or {}), **schema}
    kind = schema.get("type")
    if (
        kind == "integer" or (isinstance(kind, list) and "integer" in kind)
    ) and "enum" not in bounds:
        low = "minimum" in bounds or "exclusiveMinimum" in bounds
        high = "maximum" in bounds or "exclusiveMaximum" in bounds
        if not (low and high):
            yield where
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in schema.get(key, ()):
            yield from _unbounded(branch, where, components, bounds, seen)
    for name, sub in (schema.get("properties") or {}).items():
        yield from _unbounded(sub, f"{where}.{name}", components, None, seen)
    if isinstance(schema.get("items"), dict):
        yield from _unbounded(schema["items"], f"{where}[]", components, None, seen)
    for i, sub in enumerate(schema.get("prefixItems") or ()):
        yield from _unbounded(sub, f"{where}[{i}]", components, None, seen)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _unbounded(
            schema["additionalProperties"], f"{where}{{}}", components, None, seen
        )


def test_every_integer_parameter_and_body_field_of_every_operation_has_both_bounds() -> None:
    doc = _openapi()
    components = doc["components"]["schemas"]
    missing: list[str] = []
    operations = 0
    for method, path, op in _operations(doc):
        operations += 1
        for parameter in op.get("parameters", ()):
            where = f"{method} {path} {parameter['in']} {parameter['name']}"
            missing += _unbounded(parameter.get("schema", {}), where, components)
        for media in (op.get("requestBody") or {}).get("content", {}).values():
            missing += _unbounded(media["schema"], f"{method} {path} body", components)
    assert operations > 50, "the walk saw the routes"
    assert missing == [], "integers without both bounds:\n" + "\n".join(missing)


def _body_types(app: Litestar) -> Iterator[tuple[str, Any]]:
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if isinstance(handler, HTTPRouteHandler):
                data = handler.parsed_fn_signature.parameters.get("data")
                if data is not None:
                    yield f"{sorted(handler.http_methods)} {route.path}", data.annotation


def _problems(t: mi.Type, where: str, seen: set[type]) -> Iterator[str]:
    """Unbounded integers and structs that accept unknown fields, all the way down."""
    match t:
        case mi.StructType(cls=cls) if cls not in seen:
            seen.add(cls)
            if not t.forbid_unknown_fields:
                yield f"{where}: {cls.__qualname__} accepts unknown fields"
            for field in t.fields:
                yield from _problems(field.type, f"{where}.{field.name}", seen)
        case mi.IntType():
            if (t.ge is None and t.gt is None) or (t.le is None and t.lt is None):
                yield f"{where}: an integer without both bounds"
        case mi.UnionType():
            for branch in t.types:
                yield from _problems(branch, where, seen)
        case mi.ListType() | mi.SetType() | mi.FrozenSetType() | mi.VarTupleType():
            yield from _problems(t.item_type, f"{where}[]", seen)
        case mi.TupleType():
            for i, item in enumerate(t.item_types):
                yield from _problems(item, f"{where}[{i}]", seen)
        case mi.DictType():
            yield from _problems(t.key_type, f"{where}{{key}}", seen)
            yield from _problems(t.value_type, f"{where}{{}}", seen)
        case _:
            return


def test_every_body_and_socket_message_is_bounded_and_strict_all_the_way_down() -> None:
    found = [*_body_types(create_app()), ("socket message", ClientMessage)]
    assert len(found) > 15, "the walk saw the bodies"
    problems = [p for where, kind in found for p in _problems(mi.type_info(kind), where, set())]
    assert problems == [], "\n".join(problems)


# -- out of range is a 400 naming the field ----------------------------------------


def _filled(path: str, name: str, value: int) -> str:
    """``path`` with ``value`` for the integer ``name`` and a word for every other part."""
    out = path.replace("{" + name + "}", str(value))
    while "{" in out:
        start = out.index("{")
        out = out[:start] + "x" + out[out.index("}", start) + 1 :]
    return out


async def test_every_integer_parameter_of_every_operation_refuses_a_value_past_its_bounds_with_400(
    api: Api,
) -> None:
    doc = _openapi()
    tried = 0
    for method, path, op in _operations(doc):
        for parameter in op.get("parameters", ()):
            schema = parameter.get("schema", {})
            kinds = [schema.get("type"), *(b.get("type") for b in schema.get("oneOf", ()))]
            if "integer" not in kinds or parameter["in"] not in ("path", "query"):
                continue
            name = parameter["name"]
            for value in (int(schema["maximum"]) + 1, int(schema["minimum"]) - 1, *BIG):
                url = _filled(path, name, value)
                params = {name: str(value)} if parameter["in"] == "query" else {}
                response = await api.client.request(
                    method, url, params=params, headers=api.admin.auth, json={}
                )
                body = assert_problem(response, 400, "validation_error")
                assert name in body["detail"], (method, path, body)
                tried += 1
    assert tried >= 40, f"only {tried} out-of-range values were tried"


async def test_given_the_issues_numbers_then_each_is_a_400_naming_its_field(api: Api) -> None:
    organiser = await api.organiser()
    for field in ("spectator_delay_s", "dispute_window_s"):
        for value in (*BIG, -1):
            response = await api.post(
                "/api/ladders", organiser, {"name": f"l-{field}-{value}", field: value}
            )
            body = assert_problem(response, 400, "validation_error")
            assert field in body["detail"], body
    fitting = await api.post(
        "/api/ladders", organiser, {"name": "widest", "dispute_window_s": INT32_MAX}
    )
    assert fitting.status_code == 201, "the largest value that fits is taken"
    for value in BIG:
        rounds = await api.get(f"/api/tournaments/x/rounds/{value}", organiser)
        assert "round_no" in assert_problem(rounds, 400, "validation_error")["detail"]
        board = await api.get("/api/ladders/x/leaderboard", organiser, offset=value)
        assert "offset" in assert_problem(board, 400, "validation_error")["detail"]


async def test_given_a_misspelt_clock_field_then_the_ladder_and_the_challenge_are_refused(
    api: Api,
) -> None:
    organiser = await api.organiser()
    a, b = await api.register(), await api.register()
    typo = {"kind": "real_time", "base_s": 300, "incremnet_s": 5}
    refused = await api.post("/api/ladders", organiser, {"name": "typo", "clock": typo})
    body = assert_problem(refused, 400, "validation_error")
    assert "incremnet_s" in body["detail"]
    ladder = await api.ladder(organiser, members=(a, b), challenge_clocks=True)
    challenge = await api.post(
        f"/api/ladders/{ladder}/challenges", a, {"opponent": b.id, "clock": typo}
    )
    assert "incremnet_s" in assert_problem(challenge, 400, "validation_error")["detail"]
    post = {"kind": "correspondence", "per_move_s": 3600, "no_show": 60}
    refused = await api.post("/api/ladders", organiser, {"name": "typo2", "clock": post})
    assert "no_show" in assert_problem(refused, 400, "validation_error")["detail"]


@pytest.mark.parametrize("route", ["play", "pass", "keep", "resign"])
async def test_given_an_expected_version_out_of_range_then_the_command_is_400_and_the_log_unchanged(
    route: str, api: Api, database_url: str
) -> None:
    match_id, a, b = await api.new_match()
    before = await events_rows(database_url, match_id)
    for value in (*BIG, 0, -1):
        for who in (a, b):
            body: dict[str, Any] = {"expected_version": value}
            if route == "play":
                body |= {"card": "M1", "target": "number"}
            response = await api.post(f"/api/matches/{match_id}/{route}", who, body)
            problem = assert_problem(response, 400, "validation_error")
            assert "expected_version" in problem["detail"], problem
    assert await events_rows(database_url, match_id) == before
