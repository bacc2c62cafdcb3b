"""After-commit hooks get the committed events; a failing hook never fails a command."""

from __future__ import annotations

import pytest
from api_harness import Api
from litestar import Litestar

from service.matches import Committed

pytestmark = pytest.mark.anyio


async def test_hooks_see_the_new_events_and_their_failures_are_only_logged(
    api: Api, app: Litestar
) -> None:
    seen: list[tuple[str, list[int], list[str]]] = []

    async def record(committed: Committed) -> None:
        stored = committed.stored
        seen.append((committed.match_id, [s.version for s in stored], [s.type for s in stored]))

    async def broken(committed: Committed) -> None:
        raise RuntimeError("the hint channel is down")

    app.state.matches.after_commit[:0] = [broken, record]
    match_id, a, b = await api.new_match("duel")
    assert seen == [(match_id, [1, 2], ["match_created", "hand_dealt"])]

    view = await api.view(match_id, a)
    mover = (a, b)[view["to_move"]]
    response = await api.client.post(f"/api/matches/{match_id}/resign", json={}, headers=mover.auth)
    assert response.status_code == 200, response.text
    assert seen[-1] == (match_id, [3], ["match_ended"])
