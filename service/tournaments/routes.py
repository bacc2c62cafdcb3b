"""The organiser API for tournaments: thin controllers over ``TournamentService``.

Each route authenticates, parses the body into a tournament command and hands
it to the service; every refusal is a ``MatchaError`` and so problem+json
(``service.api.errors``): a rule the engine enforces is a 422 with its code
(``round_closed``, ``tournament_started``, ``unknown_tiebreak`` ...), a bad
body a 400, an unknown tournament a 404. docs/tournaments.md lists them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

import msgspec
from litestar import Router, delete, get, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.params import Parameter, QueryParameter
from psycopg_pool import AsyncConnectionPool

from schemas.bounds import INT32_MAX, Count, Positive
from schemas.tournament_views import (
    CrosstableView,
    PairingsView,
    StandingsView,
    TournamentLog,
    TournamentSummary,
)
from schemas.tournaments import (
    Arena,
    CreateTournament,
    ForbidPairing,
    Format,
    JoinTournament,
    PairRound,
    RoundRobin,
    StartTournament,
    Swiss,
    TournamentCommand,
    WithdrawPlayer,
)
from service.accounts.guards import requires_role
from service.accounts.players import Player
from service.errors import Forbidden
from service.ladders import ladder_by_id
from service.matches.core import new_id
from service.tournaments import projection, reads
from service.tournaments.live import standings_socket, standings_stream
from service.tournaments.service import TournamentService
from service.tournaments.trf_routes import TRF_ROUTES, enter_ladder


class SwissBody(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag="swiss",
    tag_field="type",
):
    rounds: Count
    bye_points: float = 1.0
    accelerated: bool = False
    late_entry_until: Annotated[int, msgspec.Meta(ge=1, le=50)] | None = None
    half_point_byes: Annotated[int, msgspec.Meta(ge=0, le=50)] = 0


class RoundRobinBody(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag="round_robin",
    tag_field="type",
):
    cycles: Count = 1


class ArenaBody(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag="arena",
    tag_field="type",
):
    minutes: Count
    avoid_repeats: bool = False


class CreateBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    ladder_id: str
    format: SwissBody | RoundRobinBody | ArenaBody
    tiebreaks: list[str] | None = None
    """In order; omitted: the format's usual list."""
    auto_pair: bool = True
    starts_at: datetime | None = None
    max_players: Positive | None = None


class ForbidBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    players: tuple[str, str]


class PairBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    round: Count
    pairs: list[tuple[str, str]] = []
    """Forced pairings, seat 0 first; the engine pairs everyone else."""
    byes: list[str] = []


def _format(body: SwissBody | RoundRobinBody | ArenaBody) -> Format:
    match body:
        case SwissBody():
            return Swiss(
                rounds=body.rounds,
                bye_points=body.bye_points,
                accelerated=body.accelerated,
                late_entry_until=body.late_entry_until,
                half_point_byes=body.half_point_byes,
            )
        case RoundRobinBody(cycles=cycles):
            return RoundRobin(cycles=cycles)
        case ArenaBody(minutes=minutes, avoid_repeats=avoid_repeats):
            return Arena(minutes=minutes, avoid_repeats=avoid_repeats)


def _now() -> datetime:
    return datetime.now(UTC)


def provide_tournaments(state: State) -> TournamentService:
    return state.tournaments  # type: ignore[no-any-return]


async def _run(
    tournaments: TournamentService,
    pool: AsyncConnectionPool,
    tournament_id: str,
    command: TournamentCommand,
    actor: str,
) -> TournamentSummary:
    await tournaments.execute(tournament_id, command, actor=actor)
    async with pool.connection() as conn:
        return await reads.summary(conn, tournament_id)


async def _organised(
    pool: AsyncConnectionPool, tournament_id: str, player: Player
) -> TournamentSummary:
    """The tournament, if ``player`` organises it (or is an admin)."""
    async with pool.connection() as conn:
        found = await reads.summary(conn, tournament_id)
    if found.organiser != player.id and not player.has("admin"):
        raise Forbidden("Only the tournament's organiser (or an admin) may do this.")
    return found


@post("/", operation_id="createTournament", guards=[requires_role("organiser")])
async def create_tournament(
    data: CreateBody, player: Player, pool: AsyncConnectionPool, tournaments: TournamentService
) -> TournamentSummary:
    """Create a tournament on a ladder (organisers): Swiss, round-robin or arena."""
    async with pool.connection() as conn:
        ladder = await ladder_by_id(conn, data.ladder_id)
    tournament_id = new_id()
    command = CreateTournament(
        at=_now(),
        tournament_id=tournament_id,
        name=data.name,
        organiser=player.id,
        ladder_id=ladder.id,
        ruleset=ladder.ruleset,
        format=_format(data.format),
        tiebreaks=None if data.tiebreaks is None else tuple(data.tiebreaks),
        auto_pair=data.auto_pair,
        starts_at=data.starts_at,
        max_players=data.max_players,
    )
    return await _run(tournaments, pool, tournament_id, command, player.id)


@get("/", operation_id="listTournaments", security=[])
async def list_tournaments(
    pool: AsyncConnectionPool,
    phase: Annotated[Literal["registering", "running", "finished"] | None, QueryParameter()] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
) -> list[TournamentSummary]:
    """Tournaments, newest first (``phase`` filters)."""
    async with pool.connection() as conn:
        return await reads.list_summaries(conn, phase, limit)


@get("/{tournament_id:str}", operation_id="getTournament", security=[])
async def get_tournament(tournament_id: str, pool: AsyncConnectionPool) -> TournamentSummary:
    async with pool.connection() as conn:
        return await reads.summary(conn, tournament_id)


@post("/{tournament_id:str}/players", operation_id="joinTournament", status_code=200)
async def join_tournament(
    tournament_id: str,
    player: Player,
    pool: AsyncConnectionPool,
    tournaments: TournamentService,
) -> TournamentSummary:
    """Join as the signed-in player (you join the tournament's ladder too);
    a withdrawn player who joins again comes back from the next round."""
    async with pool.connection() as conn:
        found = await reads.summary(conn, tournament_id)
        rating = await enter_ladder(conn, found.ladder_id, player.id)
    command = JoinTournament(at=_now(), player_id=player.id, rating=rating)
    return await _run(tournaments, pool, tournament_id, command, player.id)


@delete(
    "/{tournament_id:str}/players/{player_id:str}",
    operation_id="withdrawFromTournament",
    status_code=200,
)
async def withdraw(
    tournament_id: str,
    player_id: str,
    player: Player,
    pool: AsyncConnectionPool,
    tournaments: TournamentService,
) -> TournamentSummary:
    """Withdraw yourself, or (organiser) a player: honoured from the next round."""
    if player_id == player.id:
        by: Literal["player", "organiser"] = "player"
    else:
        await _organised(pool, tournament_id, player)
        by = "organiser"
    command = WithdrawPlayer(at=_now(), player_id=player_id, by=by)
    return await _run(tournaments, pool, tournament_id, command, player.id)


@post("/{tournament_id:str}/forbidden-pairings", operation_id="forbidPairing", status_code=200)
async def forbid_pairing(
    tournament_id: str,
    data: ForbidBody,
    player: Player,
    pool: AsyncConnectionPool,
    tournaments: TournamentService,
) -> TournamentSummary:
    """The two players are never paired together (organiser)."""
    await _organised(pool, tournament_id, player)
    command = ForbidPairing(at=_now(), players=data.players)
    return await _run(tournaments, pool, tournament_id, command, player.id)


@post("/{tournament_id:str}/start", operation_id="startTournament", status_code=200)
async def start_tournament(
    tournament_id: str,
    player: Player,
    pool: AsyncConnectionPool,
    tournaments: TournamentService,
) -> TournamentSummary:
    """Start now (organiser): seeds by rating, pairs round 1 (an arena: everyone)."""
    await _organised(pool, tournament_id, player)
    return await _run(tournaments, pool, tournament_id, StartTournament(at=_now()), player.id)


@post("/{tournament_id:str}/rounds", operation_id="pairRound", status_code=200)
async def pair_round(
    tournament_id: str,
    data: PairBody,
    player: Player,
    pool: AsyncConnectionPool,
    tournaments: TournamentService,
) -> PairingsView:
    """Pair the next round (organiser), with forced pairings or byes if given."""
    await _organised(pool, tournament_id, player)
    command = PairRound(at=_now(), round=data.round, pairs=tuple(data.pairs), byes=tuple(data.byes))
    await tournaments.execute(tournament_id, command, actor=player.id)
    async with pool.connection() as conn:
        return await reads.pairings(conn, tournament_id, data.round)


@get("/{tournament_id:str}/rounds", operation_id="tournamentPairings", security=[])
async def list_rounds(tournament_id: str, pool: AsyncConnectionPool) -> PairingsView:
    """Every round's pairings and byes (an arena's games are all in round 0)."""
    async with pool.connection() as conn:
        return await reads.pairings(conn, tournament_id)


@get("/{tournament_id:str}/rounds/{round_no:int}", operation_id="tournamentRound", security=[])
async def get_round(
    tournament_id: str,
    round_no: Annotated[int, Parameter(ge=0, le=INT32_MAX)],
    pool: AsyncConnectionPool,
) -> PairingsView:
    async with pool.connection() as conn:
        return await reads.pairings(conn, tournament_id, round_no)


@get("/{tournament_id:str}/standings", operation_id="tournamentStandings", security=[])
async def get_standings(tournament_id: str, pool: AsyncConnectionPool) -> StandingsView:
    """The standings with their tie-break columns, in the organiser's order."""
    async with pool.connection() as conn:
        return await reads.standings(conn, tournament_id)


@get("/{tournament_id:str}/crosstable", operation_id="tournamentCrosstable", security=[])
async def get_crosstable(tournament_id: str, pool: AsyncConnectionPool) -> CrosstableView:
    async with pool.connection() as conn:
        return await reads.crosstable(conn, tournament_id)


@get("/{tournament_id:str}/log", operation_id="tournamentLog", security=[])
async def get_log(tournament_id: str, pool: AsyncConnectionPool) -> TournamentLog:
    """The tournament's whole stream, with its hash chain checked."""
    async with pool.connection() as conn:
        return await reads.log(conn, tournament_id)


@post(
    "/{tournament_id:str}/rebuild",
    operation_id="rebuildTournament",
    status_code=200,
    guards=[requires_role("admin")],
)
async def rebuild(tournament_id: str, pool: AsyncConnectionPool) -> StandingsView:
    """Rebuild the tournament's projections from its stream (admins)."""
    async with pool.connection() as conn:
        await reads.summary(conn, tournament_id)
        await projection.rebuild(conn, tournament_id)
        return await reads.standings(conn, tournament_id)


ROUTES = [
    Router(
        path="/api/tournaments",
        route_handlers=[
            create_tournament,
            list_tournaments,
            get_tournament,
            join_tournament,
            withdraw,
            forbid_pairing,
            start_tournament,
            pair_round,
            list_rounds,
            get_round,
            get_standings,
            get_crosstable,
            get_log,
            rebuild,
            standings_stream,
            standings_socket,
            *TRF_ROUTES,
        ],
        dependencies={"tournaments": Provide(provide_tournaments, sync_to_thread=False)},
        tags=["tournaments"],
    )
]
"""Mounted by ``service.app`` (its ``ROUTES`` list)."""
