from __future__ import annotations

import pytest
from tournament_harness import TournamentApi


@pytest.mark.anyio
async def test_a_swiss_of_five_runs_itself_to_the_end(api: TournamentApi) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser, "duel")
    players = [await api.register() for _ in range(5)]
    accounts = {p.id: p for p in players}
    t = await api.create(organiser, ladder, {"type": "swiss", "rounds": 3})
    for p in players:
        await api.enter(t["id"], p)
    await api.start(t["id"], organiser)
    for _ in range(3):
        await api.play_round(t["id"], accounts)

    async def finished() -> bool:
        return (await api.read(t["id"]))["phase"] == "finished"

    await api.wait_for(finished)
    standings = await api.read(t["id"], "standings")
    print(standings)
    assert sum(r["points"] for r in standings["rows"]) == 3 * 2 + 3
