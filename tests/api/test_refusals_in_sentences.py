"""A simple mistake gets a sentence that says what to do, not the parser's words."""

from __future__ import annotations

import pytest
from api_harness import Api, assert_problem, events_rows

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("route", ["pass", "resign", "keep", "play"])
async def test_given_a_command_without_a_body_then_the_problem_says_a_json_body_is_needed(
    route: str, api: Api, database_url: str
) -> None:
    match_id, a, _ = await api.new_match()
    before = await events_rows(database_url, match_id)
    response = await api.client.post(f"/api/matches/{match_id}/{route}", headers=a.auth)
    body = assert_problem(response, 400, "validation_error")
    assert "'data'" not in body["detail"] and "(field: data)" not in body["detail"], body
    assert "JSON body" in body["detail"], body
    assert await events_rows(database_url, match_id) == before
