"""A tournament survives an API restart and a runner killed mid-round, and ends
with the standings of an uninterrupted run with the same results."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from tournament_engine import AT
from tournament_harness import ADMIN_TOKEN, ApiProcess, TournamentApi, decisive_loser

from schemas.tournaments import (
    CreateTournament,
    JoinTournament,
    RecordResult,
    StartTournament,
    Swiss,
)
from service.settings import Settings
from service.tournaments import standings
from service.tournaments.simulate import Run
from service.tournaments.state import running_games

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def uninterrupted(tournament_id: str, players: list[str]) -> list[tuple[str, float, tuple]]:  # type: ignore[type-arg]
    """The same tournament in memory, every game ending as the script says."""
    run = Run()
    run.send(
        CreateTournament(
            at=AT,
            tournament_id=tournament_id,
            name="x",
            organiser="o",
            ladder_id="l",
            ruleset="duel",
            format=Swiss(rounds=3),
        )
    )
    for p in players:
        run.send(JoinTournament(at=AT, player_id=p, rating=1500.0))
    run.send(StartTournament(at=AT))
    while run.state.phase != "finished":
        for game in running_games(run.state):
            assert game.match_id is not None
            loser = decisive_loser(game.match_id, game.players)
            run.send(
                RecordResult(
                    at=AT,
                    match_id=game.match_id,
                    winner=1 - loser,  # type: ignore[arg-type]
                    reason="resigned",
                )
            )
    return [(r.player_id, r.points, r.tiebreaks) for r in standings(run.state)]


@contextlib.contextmanager
def running(*processes: ApiProcess) -> Iterator[None]:
    try:
        yield
    finally:
        for process in processes:
            process.stop()


async def test_an_api_restart_and_a_runner_kill_mid_round_change_no_standing(
    settings: Settings,
) -> None:
    api_process = ApiProcess(settings, ADMIN_TOKEN, MATCHA_TOURNAMENT_RUNNER="0").start()
    worker = ApiProcess(settings, ADMIN_TOKEN).start()  # the runner lives here
    restarted = ApiProcess(settings, ADMIN_TOKEN)  # the API again, with a runner of its own
    with running(api_process, worker, restarted):
        async with httpx.AsyncClient(base_url=api_process.base, timeout=20) as client:
            api = TournamentApi(client)
            organiser = await api.organiser()
            ladder = await api.ladder(organiser, "duel")
            players = [await api.register() for _ in range(6)]
            accounts = {p.id: p for p in players}
            t = await api.create(organiser, ladder, {"type": "swiss", "rounds": 3})
            for p in players:
                await api.enter(t["id"], p)
            await api.start(t["id"], organiser)
            await api.play_round(t["id"], accounts)  # round 1, applied by the worker

            async def round_two() -> bool:
                return (await api.read(t["id"]))["round"] == 2

            await api.wait_for(round_two)
            games = await api.open_games(t["id"])
            assert len(games) == 3
            for game in games[:2]:  # two results, then the worker dies mid-round
                await api.wait_for(lambda g=game: _started(client, g["match_id"]))
                seat = decisive_loser(game["match_id"], tuple(game["players"]))
                await api.resign(game["match_id"], accounts[game["players"][seat]])
            worker.kill()
            last = games[2]
            await api.wait_for(lambda: _started(client, last["match_id"]))
            seat = decisive_loser(last["match_id"], tuple(last["players"]))
            await api.resign(last["match_id"], accounts[last["players"][seat]])
        api_process.stop()  # and the API restarts too, the round's end still unapplied
        async with await psycopg.AsyncConnection.connect(settings.database.url) as conn:
            cur = await conn.execute(
                "SELECT round, round_open FROM tournaments WHERE id = %s", (t["id"],)
            )
            assert await cur.fetchone() == (2, True)  # nobody applied the last result
        restarted.start()  # catches up from its position in the match log
        async with httpx.AsyncClient(base_url=restarted.base, timeout=20) as client:
            api = TournamentApi(client)

            async def round_three() -> bool:
                return (await api.read(t["id"]))["round"] == 3

            await api.wait_for(round_three)
            await api.play_round(t["id"], accounts)

            async def finished() -> bool:
                return (await api.read(t["id"]))["phase"] == "finished"

            await api.wait_for(finished)
            table = (await api.read(t["id"], "standings"))["rows"]
            log = await api.read(t["id"], "log")
    got = [(r["player_id"], r["points"], tuple(r["tiebreaks"])) for r in table]
    assert got == uninterrupted(t["id"], [p.id for p in players])
    assert log["chain_ok"]
    results = [e for e in log["entries"] if e["type"] == "result_recorded"]
    assert len(results) == 9  # each game's result once, whatever the restarts


async def _started(client: httpx.AsyncClient, match_id: str) -> bool:
    return (await client.get(f"/api/matches/{match_id}")).status_code == 200
