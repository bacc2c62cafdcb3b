"""A hostile client interleaves hundreds of malformed, mistyped, misaddressed and
out-of-turn commands with a real match: every one is a 4xx problem (never a 5xx),
none changes the log, and the match still plays to an end the audit confirms."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest
from api_harness import Api, events_rows

from service.audit import audit_match
from service.bots import random_bot
from service.bots.seat_view import bot_request

pytestmark = pytest.mark.anyio

CARDS = [f"{s}{n}" for s in "MCWS" for n in range(1, 5)] + ["Z1", "Z2"]
ROUTES = ["play", "play", "play", "pass", "keep", "nope", "play/../pass"]
"""No resign: one accepted by chance would end the match before the test has begun."""


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value a careless or malicious client might send in any field."""
    choices: list[Any] = [
        None,
        True,
        False,
        0,
        -1,
        2**63,
        1.5,
        float("inf") if depth else 1e308,
        "",
        rng.choice(CARDS),
        rng.choice(CARDS).lower(),
        "M5",
        "Z3",
        "number",
        "suit",
        "both",
        "\u0000",
        "é" * 3,
        "x" * 5000,
        "<script>",
        "' OR 1=1 --",
    ]
    if depth < 3:
        choices += [
            [_value(rng, depth + 1) for _ in range(rng.randrange(4))],
            {rng.choice(["card", "target", "cards", "seat", "x"]): _value(rng, depth + 1)},
        ]
    value = rng.choice(choices)
    return None if value == float("inf") else value


def _hostile_body(rng: random.Random, route: str) -> bytes | dict[str, Any] | list[Any]:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice([b"", b"{", b"null", b"[]", b"\xff\xfe", b'{"card": "M1"' * 50])
    if kind == 1:
        return {
            k: _value(rng)
            for k in rng.sample(
                ["card", "target", "cards", "expected_version", "seat", "player", "version"],
                rng.randrange(1, 4),
            )
        }
    # Well formed, and wrong in what it says: a card not held, a taken target, a
    # stale version, the wrong phase, another's turn (with the headers' wrong seat).
    body: dict[str, Any] = {}
    if route == "play":
        body = {"card": rng.choice(CARDS), "target": rng.choice(["number", "suit"])}
    elif route == "keep":
        body = {"cards": rng.sample(CARDS, rng.randrange(3))}
    if rng.random() < 0.5:
        body["expected_version"] = rng.randrange(0, 200)
    return body


def _hostile_headers(rng: random.Random, seats: list[dict[str, str]]) -> dict[str, Any]:
    headers: dict[str, Any] = dict(
        rng.choice(
            [
                *seats,
                {},
                {"Authorization": "Bearer forged"},
                {"Authorization": "Basic eA=="},
                {"Authorization": "Bearer "},
            ]
        )
    )
    if rng.random() < 0.4:
        headers["If-Match"] = rng.choice(["0", "-3", "abc", "1.5", "99999999999999999999", ""])
    if rng.random() < 0.3:
        headers["Idempotency-Key"] = rng.choice(["k", "x" * 300, "ké".encode(), ""])
    return headers


async def test_hostile_commands_never_crash_the_server_or_touch_the_log(
    api: Api, database_url: str
) -> None:
    rng = random.Random(2026)
    refused: dict[int, int] = {}
    accepted_hostile = 0
    played: list[str] = []
    while sum(refused.values()) + accepted_hostile < 400:
        match_id, a, b = await api.new_match("duel")
        played.append(match_id)
        seats = [a, b]
        while True:  # rounds of: a burst of hostile requests, then one honest move
            views = [await api.view(match_id, s) for s in seats]
            if views[0]["result"] is not None:
                break
            for _ in range(8):
                before = await events_rows(database_url, match_id)
                route = rng.choice(ROUTES)
                body = _hostile_body(rng, route)
                kwargs: dict[str, Any] = (
                    {"content": body} if isinstance(body, bytes) else {"json": body}
                )
                response = await api.client.post(
                    f"/api/matches/{match_id}/{route}",
                    headers=_hostile_headers(rng, [s.auth for s in seats]),
                    **kwargs,
                )
                assert response.status_code < 500, response.text
                if response.status_code >= 400:
                    assert response.headers["content-type"].startswith("application/problem+json")
                    assert await events_rows(database_url, match_id) == before, response.text
                    refused[response.status_code] = refused.get(response.status_code, 0) + 1
                else:
                    accepted_hostile += 1  # a random command that happened to be legal
            views = [await api.view(match_id, s) for s in seats]
            for seat in (0, 1):
                request = bot_request(views[seat], random_bot, rng)
                if request is not None:
                    route, move = request
                    move["expected_version"] = views[seat]["version"]
                    ok = await api.client.post(
                        f"/api/matches/{match_id}/{route}", json=move, headers=seats[seat].auth
                    )
                    assert ok.status_code == 200, ok.text
                    break
    # Hostile requests were refused in every way a client can be wrong...
    assert {400, 401, 404, 409, 422} <= set(refused), refused
    # ...and each log is still a match the engine re-folds without a difference.
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for match_id in played:
            report = await audit_match(conn, match_id)
            assert report.verdict.consistent, report.verdict.line
