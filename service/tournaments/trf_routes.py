"""TRF-2026 over HTTP: export any tournament, seed a Swiss from an organiser's file,
and a player's request for a half-point bye (``routes.py`` mounts them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from litestar import Response, get, post
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from schemas.tournament_views import TournamentSummary
from schemas.tournaments import CreateTournament, JoinTournament, RequestBye, Swiss, TiebreakName
from service.accounts.guards import requires_role
from service.accounts.players import Player
from service.errors import RuleError
from service.ladders import ladder_by_id, rating_of
from service.matches.core import new_id
from service.tournaments import reads, trf
from service.tournaments.service import TournamentService
from service.tournaments.tiebreaks import TRF_CODES
from service.tournaments.trf_export import export

MAX_TRF_BYTES = 1_000_000


class ImportBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    ladder_id: str
    trf: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TRF_BYTES)]
    """The file's text: its 012 name, 142 rounds, 162 bye points, 202 tie-breaks
    and 001 players (by name: each must be a Matcha player) seed the tournament."""
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)] | None = None


class ByeBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    round: Annotated[int, msgspec.Meta(ge=1, le=50)]


async def enter_ladder(conn: AsyncConnection[Any], ladder_id: str, player_id: str) -> float:
    """Make the player a member of the ladder (a tournament's entrants are) and
    return their rating there: the seeding."""
    await conn.execute(
        "INSERT INTO ladder_members (ladder_id, player_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (ladder_id, player_id),
    )
    return await rating_of(conn, ladder_id, player_id)


async def names_of(conn: AsyncConnection[Any], ids: list[str]) -> dict[str, str]:
    cur = await conn.execute("SELECT id, name FROM players WHERE id = ANY(%s)", (ids,))
    return {i: n for i, n in await cur.fetchall()}


@get("/{tournament_id:str}/trf", operation_id="tournamentTrf", security=[], media_type="text/plain")
async def get_trf(
    tournament_id: str, pool: AsyncConnectionPool, tournaments: TournamentService
) -> Response[str]:
    """The tournament as a TRF-2026 file (what FIDE rating reports and pairing programs read)."""
    async with pool.connection() as conn:
        await reads.summary(conn, tournament_id)
        state = await tournaments.current(tournament_id)
        names = await names_of(conn, [*state.entrants, state.organiser])
    text = trf.write(export(state, names))
    return Response(
        text,
        media_type="text/plain; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{tournament_id}.trf"'},
    )


_BY_CODE: dict[str, TiebreakName] = {code: name for name, code in TRF_CODES.items()}


@post("/import", operation_id="importTournament", guards=[requires_role("organiser")])
async def import_trf(
    data: ImportBody, player: Player, pool: AsyncConnectionPool, tournaments: TournamentService
) -> TournamentSummary:
    """Seed a Swiss from a TRF file: its players (Matcha players, by name) join
    with the file's ratings, in its starting order; nothing is paired yet."""
    try:
        parsed = trf.read(data.trf)
    except trf.TrfError as error:
        raise RuleError("bad_trf", f"The file is not TRF: {error}.") from error
    unknown_codes = [c for c in parsed.tiebreaks if c not in _BY_CODE]
    if unknown_codes:
        raise RuleError("unknown_tiebreak", f"Unknown tie-break codes in 202: {unknown_codes}.")
    async with pool.connection() as conn:
        ladder = await ladder_by_id(conn, data.ladder_id)
        wanted = [p.name for p in parsed.players]
        cur = await conn.execute("SELECT name, id FROM players WHERE name = ANY(%s)", (wanted,))
        ids = {n: i for n, i in await cur.fetchall()}
    missing = [n for n in wanted if n not in ids]
    if missing:
        raise RuleError(
            "unknown_players", f"These players have no Matcha account: {', '.join(missing[:20])}."
        )
    tournament_id = new_id()
    at = datetime.now(UTC)
    create = CreateTournament(
        at=at,
        tournament_id=tournament_id,
        name=data.name or parsed.name,
        organiser=player.id,
        ladder_id=ladder.id,
        ruleset=ladder.ruleset,
        format=Swiss(rounds=max(1, parsed.rounds), bye_points=parsed.bye_points),
        tiebreaks=tuple(_BY_CODE[c] for c in parsed.tiebreaks) or None,
    )
    await tournaments.execute(tournament_id, create, actor=player.id)
    for entry in parsed.players:
        player_id = ids[entry.name]
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO ladder_members (ladder_id, player_id) VALUES (%s, %s)"
                " ON CONFLICT DO NOTHING",
                (ladder.id, player_id),
            )
            rating = (
                float(entry.rating) if entry.rating else await rating_of(conn, ladder.id, player_id)
            )
        join = JoinTournament(at=at, player_id=player_id, rating=rating)
        await tournaments.execute(tournament_id, join, actor=player.id)
    async with pool.connection() as conn:
        return await reads.summary(conn, tournament_id)


@post("/{tournament_id:str}/byes", operation_id="requestBye", status_code=200)
async def request_bye(
    tournament_id: str,
    data: ByeBody,
    player: Player,
    pool: AsyncConnectionPool,
    tournaments: TournamentService,
) -> TournamentSummary:
    """Ask for a half-point bye in a round not yet paired (as many as the organiser allows)."""
    command = RequestBye(at=datetime.now(UTC), player_id=player.id, round=data.round)
    await tournaments.execute(tournament_id, command, actor=player.id)
    async with pool.connection() as conn:
        return await reads.summary(conn, tournament_id)


TRF_ROUTES = [get_trf, import_trf, request_bye]
