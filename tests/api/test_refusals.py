"""Every class of refused command answers with its code as problem+json, and
the match's log is byte-for-byte unchanged afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from api_harness import Account, Api, assert_problem, events_rows

pytestmark = pytest.mark.anyio


class Table:
    """One fresh match, its two players (by seat) and an outsider."""

    def __init__(self, api: Api, url: str, match_id: str, seats: tuple[Account, Account]) -> None:
        self.api, self.url, self.match_id, self.seats = api, url, match_id, seats

    async def view(self, seat: int) -> dict[str, Any]:
        return await self.api.view(self.match_id, self.seats[seat])

    async def send(self, account: Account | None, route: str, body: Any, **headers: str) -> Any:
        auth = account.auth if account else {}
        return await self.api.client.post(
            f"/api/matches/{self.match_id}/{route}", json=body, headers={**auth, **headers}
        )

    async def refused_unchanged(
        self, status: int, code: str, attempt: Callable[[], Awaitable[Any]]
    ) -> dict[str, Any]:
        before = await events_rows(self.url, self.match_id)
        body = assert_problem(await attempt(), status, code)
        assert await events_rows(self.url, self.match_id) == before
        return body


@pytest.fixture
async def table(api: Api, database_url: str) -> Table:
    match_id, a, b = await api.new_match()
    return Table(api, database_url, match_id, (a, b))


async def _mover(table: Table) -> tuple[int, dict[str, Any]]:
    view = await table.view(0)
    mover = view["to_move"]
    return mover, await table.view(mover)


async def test_playing_out_of_turn_is_not_your_turn(table: Table) -> None:
    mover, _ = await _mover(table)
    waiting = 1 - mover
    card = (await table.view(waiting))["seats"][waiting]["hand"][0]
    await table.refused_unchanged(
        422,
        "not_your_turn",
        lambda: table.send(table.seats[waiting], "play", {"card": card, "target": "number"}),
    )


async def test_playing_a_card_not_held_is_card_not_in_hand(table: Table) -> None:
    mover, view = await _mover(table)
    tea_card = view["tatami"][0]["number"]["tea_card"]
    await table.refused_unchanged(
        422,
        "card_not_in_hand",
        lambda: table.send(table.seats[mover], "play", {"card": tea_card, "target": "suit"}),
    )


async def test_keeping_during_a_round_is_wrong_phase(table: Table) -> None:
    mover, _ = await _mover(table)
    await table.refused_unchanged(
        422, "wrong_phase", lambda: table.send(table.seats[mover], "keep", {"cards": []})
    )


async def test_a_second_card_beside_the_same_target_is_target_taken(table: Table) -> None:
    mover, view = await _mover(table)
    first, second = view["seats"][mover]["hand"][:2]
    played = await table.send(table.seats[mover], "play", {"card": first, "target": "number"})
    assert played.status_code == 200, played.text
    passed = await table.send(table.seats[1 - mover], "pass", {})
    assert passed.status_code == 200, passed.text
    await table.refused_unchanged(
        422,
        "target_taken",
        lambda: table.send(table.seats[mover], "play", {"card": second, "target": "number"}),
    )


async def test_moving_after_passing_is_already_passed(table: Table) -> None:
    mover, view = await _mover(table)
    card = view["seats"][mover]["hand"][0]
    passed = await table.send(table.seats[mover], "pass", {})
    assert passed.status_code == 200, passed.text
    await table.refused_unchanged(
        422,
        "already_passed",
        lambda: table.send(table.seats[mover], "play", {"card": card, "target": "suit"}),
    )


async def test_any_command_after_the_end_is_match_over(table: Table) -> None:
    resigned = await table.send(table.seats[0], "resign", {})
    assert resigned.status_code == 200, resigned.text
    await table.refused_unchanged(422, "match_over", lambda: table.send(table.seats[1], "pass", {}))


async def test_a_stale_expected_version_is_version_conflict(table: Table) -> None:
    mover, view = await _mover(table)
    stale = view["version"] - 1
    body = await table.refused_unchanged(
        409,
        "version_conflict",
        lambda: table.send(table.seats[mover], "pass", {"expected_version": stale}),
    )
    assert str(view["version"]) in body["detail"]
    await table.refused_unchanged(
        409,
        "version_conflict",
        lambda: table.send(table.seats[mover], "pass", {}, **{"If-Match": str(stale)}),
    )


async def test_no_token_or_a_wrong_token_is_unauthorized(table: Table) -> None:
    mover, _ = await _mover(table)
    await table.refused_unchanged(401, "unauthorized", lambda: table.send(None, "pass", {}))
    forged = Account(id=table.seats[mover].id, name="x", token="not-a-token")
    response = await table.refused_unchanged(
        401, "unauthorized", lambda: table.send(forged, "pass", {})
    )
    assert response["instance"] == f"/api/matches/{table.match_id}/pass"


async def test_an_outsider_acting_in_a_match_is_forbidden(table: Table) -> None:
    outsider = await table.api.register()
    await table.refused_unchanged(403, "forbidden", lambda: table.send(outsider, "pass", {}))
    await table.refused_unchanged(403, "forbidden", lambda: table.send(outsider, "resign", {}))


async def test_a_player_cannot_name_the_other_seat(table: Table) -> None:
    """The seat is never in a body: it is the caller's own. Naming one is invalid."""
    mover, _ = await _mover(table)
    await table.refused_unchanged(
        400,
        "validation_error",
        lambda: table.send(table.seats[1 - mover], "pass", {"seat": mover}),
    )


async def test_an_unknown_match_is_not_found(table: Table) -> None:
    response = await table.api.client.post(
        f"/api/matches/{uuid.uuid4()}/pass", json={}, headers=table.seats[0].auth
    )
    assert_problem(response, 404, "not_found")
    response = await table.api.client.get(f"/api/matches/{uuid.uuid4()}")
    assert_problem(response, 404, "not_found")


async def test_an_unknown_card_code_is_a_validation_error_naming_the_field(table: Table) -> None:
    mover, _ = await _mover(table)
    body = await table.refused_unchanged(
        400,
        "validation_error",
        lambda: table.send(table.seats[mover], "play", {"card": "X9", "target": "number"}),
    )
    assert "card" in body["detail"]
    body = await table.refused_unchanged(
        400,
        "validation_error",
        lambda: table.send(table.seats[mover], "play", {"card": "M1", "target": "middle"}),
    )
    assert "target" in body["detail"]


async def test_a_body_that_is_not_json_is_a_validation_error(table: Table) -> None:
    mover, _ = await _mover(table)

    async def broken() -> Any:
        return await table.api.client.post(
            f"/api/matches/{table.match_id}/play",
            content=b'{"card": "M1", "target": ',
            headers={**table.seats[mover].auth, "content-type": "application/json"},
        )

    await table.refused_unchanged(400, "validation_error", broken)


async def test_an_idempotency_key_reused_for_another_command_is_refused(table: Table) -> None:
    mover, view = await _mover(table)
    card = view["seats"][mover]["hand"][0]
    key = {"Idempotency-Key": "k-1"}
    first = await table.send(table.seats[mover], "play", {"card": card, "target": "suit"}, **key)
    assert first.status_code == 200, first.text
    await table.refused_unchanged(
        409,
        "idempotency_key_reused",
        lambda: table.send(table.seats[mover], "pass", {}, **key),
    )


async def test_an_unknown_route_and_a_wrong_method_are_problems_too(api: Api) -> None:
    assert_problem(await api.client.get("/api/nothing-here"), 404, "not_found")
    assert_problem(await api.client.delete("/api/players"), 405, "method_not_allowed")


async def test_a_body_nested_too_deeply_is_a_validation_error(table: Table) -> None:
    mover, _ = await _mover(table)
    await table.refused_unchanged(
        400,
        "validation_error",
        lambda: table.api.client.post(
            f"/api/matches/{table.match_id}/play",
            content=b"[" * 100_000 + b"]" * 100_000,
            headers={**table.seats[mover].auth, "content-type": "application/json"},
        ),
    )


async def test_text_with_a_nul_character_is_refused_and_nothing_is_written(
    api: Api, database_url: str
) -> None:
    # PostgreSQL text and JSONB cannot hold U+0000: a 400, not a 500.
    body = assert_problem(
        await api.client.post("/api/players", json={"name": "tea\u0000master"}),
        400,
        "validation_error",
    )
    assert "NUL" in body["detail"]
    match_id, a, b = await api.new_match("duel")
    await api.client.post(f"/api/matches/{match_id}/resign", json={}, headers=a.auth)
    table = Table(api, database_url, match_id, (a, b))
    refused = await table.refused_unchanged(
        400,
        "validation_error",
        lambda: api.client.post(
            f"/api/matches/{match_id}/disputes", json={"reason": "odd\u0000deal"}, headers=a.auth
        ),
    )
    assert "NUL" in refused["detail"]  # the event reached JSONB, which refused it
