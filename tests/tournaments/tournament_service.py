"""Whole tournaments driven through ``TournamentService`` (the database, no HTTP),
with scripted results: what the store and projection tests share."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from schemas.tournaments import (
    CreateTournament,
    EndTournament,
    Format,
    JoinTournament,
    RecordResult,
    StartTournament,
)
from service.tournaments.service import TournamentService
from service.tournaments.state import running_games

TABLES = {
    "tournaments": "id",
    "tournament_standings": "tournament_id, place",
    "tournament_games": "tournament_id, game",
    "tournament_byes": "tournament_id, round, player_id",
}


async def run_tournament(
    service: TournamentService, tournament_id: str, fmt: Format, players: int, seed: int
) -> None:
    """Create, fill, start and play a tournament to its end, one command per transaction."""
    rng = random.Random(seed)
    at = datetime(2030, 1, 1, 18, 0, tzinfo=UTC)
    await service.execute(
        tournament_id,
        CreateTournament(
            at=at,
            tournament_id=tournament_id,
            name=f"cup {tournament_id}",
            organiser="org",
            ladder_id="ladder",
            ruleset="standard",
            format=fmt,
            tiebreaks=("direct_encounter", "buchholz_cut1", "sonneborn_berger", "wins"),
        ),
        actor="org",
    )
    for i in range(players):
        await service.execute(
            tournament_id,
            JoinTournament(at=at, player_id=f"{tournament_id}-p{i}", rating=rng.gauss(1500, 100)),
            actor="player",
        )
    outcome = await service.execute(tournament_id, StartTournament(at=at), actor="org")
    state = outcome.state
    minute = 0
    while state.phase != "finished":
        minute += 1
        games = [g for g in running_games(state) if g.match_id]
        now = at + timedelta(minutes=minute)
        if not games or (state.ends_at is not None and now >= state.ends_at):
            state = (
                await service.execute(tournament_id, EndTournament(at=now), actor="runner")
            ).state
            continue
        game = rng.choice(games)
        assert game.match_id is not None
        command = RecordResult(
            at=now, match_id=game.match_id, winner=rng.choice([0, 1, None]), reason="qualified"
        )
        if rng.random() < 0.08:
            command = RecordResult(
                at=now,
                match_id=game.match_id,
                winner=None,
                reason="aborted",
                forfeit=rng.choice([0, 1]),
            )
        state = (await service.execute(tournament_id, command, actor="runner")).state


async def table_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the projection tables, in a stable order."""
    out = {}
    async with await psycopg.AsyncConnection.connect(url) as conn:
        for table, order in TABLES.items():
            columns = (
                "*"
                if table != "tournaments"
                else (
                    "id, name, organiser, ladder_id, format, settings, phase, round, rounds,"
                    " round_open, players, starts_at, started_at, ends_at, ended_at, created_at,"
                    " version, head"
                )
            )
            cur = await conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
            out[table] = await cur.fetchall()
    return out
