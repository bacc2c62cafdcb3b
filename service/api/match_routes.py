"""Match commands (play, pass, keep, resign) and reads (view, log, lists).

Every outward view goes through the engine's observer (``view``/``redact``):
this module only chooses *who* is looking (RULES §8):

* a player of the match sees from their seat (and everything once it ended);
* an administrator sees everything once the match ended (never during it);
* anyone else is a spectator (and sees everything once the match ended,
  unless the ladder keeps hands hidden in replays).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get, post
from litestar.params import HeaderParameter, QueryParameter
from psycopg_pool import AsyncConnectionPool

from schemas.views import LogEntry, MatchView, Viewer
from service.api.auth import Player
from service.api.deps import current_player, maybe_player
from service.api.ladders import viewing_rules
from service.engine import State, fold, is_terminal, redact, view
from service.errors import ValidationFailed
from service.matches import (
    CommandBody,
    CommandResult,
    KeepBody,
    MatchService,
    PassBody,
    PlayBody,
    ResignBody,
    seat_of,
)

IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        max_length=200,
        description="A retry with the same key returns the first result and appends nothing.",
    ),
]
IfMatch = Annotated[
    str | None,
    HeaderParameter(name="If-Match", description="The version the command expects."),
]


def _expected_version(body: CommandBody, if_match: str | None) -> int | None:
    header: int | None = None
    if if_match is not None:
        raw = if_match.strip().removeprefix("W/").strip('"')
        if not raw.isdigit():
            raise ValidationFailed("If-Match must be a match version (a whole number).")
        header = int(raw)
    body_version = body.expected_version
    if header is not None and body_version is not None and header != body_version:
        raise ValidationFailed("If-Match and expected_version disagree.")
    return header if header is not None else body_version


async def _command(
    request: Request[Any, Any, Any],
    match_id: str,
    body: CommandBody,
    if_match: str | None,
    idempotency_key: str | None,
) -> CommandResult:
    # The caller and the service are read here, not injected: two injected
    # dependencies make litestar resolve them in an anyio task group, which
    # cost about 7% of the API's CPU per request (docs/api.md "Performance").
    player = await current_player(request)
    matches: MatchService = request.app.state.matches
    return await matches.handle(
        match_id, player, body, _expected_version(body, if_match), idempotency_key
    )


@post(
    "/api/matches/{match_id:str}/play", operation_id="playCard", tags=["commands"], status_code=200
)
async def play(
    match_id: str,
    data: PlayBody,
    request: Request[Any, Any, Any],
    if_match: IfMatch,
    idempotency_key: IdempotencyKey,
) -> CommandResult:
    """Play a card face down beside a target of the current round."""
    return await _command(request, match_id, data, if_match, idempotency_key)


@post("/api/matches/{match_id:str}/pass", operation_id="pass", tags=["commands"], status_code=200)
async def pass_(
    match_id: str,
    data: PassBody,
    request: Request[Any, Any, Any],
    if_match: IfMatch,
    idempotency_key: IdempotencyKey,
) -> CommandResult:
    """Take no more turns this round."""
    return await _command(request, match_id, data, if_match, idempotency_key)


@post(
    "/api/matches/{match_id:str}/keep", operation_id="keepCards", tags=["commands"], status_code=200
)
async def keep(
    match_id: str,
    data: KeepBody,
    request: Request[Any, Any, Any],
    if_match: IfMatch,
    idempotency_key: IdempotencyKey,
) -> CommandResult:
    """Between hands: keep these cards (any subset of your hand, maybe none)."""
    return await _command(request, match_id, data, if_match, idempotency_key)


@post(
    "/api/matches/{match_id:str}/resign", operation_id="resign", tags=["commands"], status_code=200
)
async def resign(
    match_id: str,
    data: ResignBody,
    request: Request[Any, Any, Any],
    if_match: IfMatch,
    idempotency_key: IdempotencyKey,
) -> CommandResult:
    """Give up the match; the opponent wins."""
    return await _command(request, match_id, data, if_match, idempotency_key)


class _Seen(msgspec.Struct, frozen=True, kw_only=True):
    viewer: Viewer
    hide_hands: bool
    over: bool
    state: State
    horizon: datetime | None
    """For a live spectator of a delayed ladder: only events recorded by then."""


async def _load_for(
    matches: MatchService, pool: AsyncConnectionPool, match_id: str, caller: Player | None
) -> _Seen:
    """The match folded as ``caller`` may see it, and from which viewpoint."""
    folded = await matches.current(match_id)
    created, state = folded.created, folded.state
    over = is_terminal(state)
    hide_hands = False
    delay = 0
    seat = seat_of(created, caller.id) if caller else None
    # A player during the match sees from their seat whatever the ladder's
    # rules (they only hide hands after the end and delay spectators): no
    # pool checkout for them on the hot path.
    if created.ladder_id is not None and (seat is None or over):
        async with pool.connection() as conn:
            hide_hands, delay = await viewing_rules(conn, created.ladder_id)
    viewer: Viewer
    horizon: datetime | None = None
    if seat is not None:
        viewer = seat
    elif caller is not None and caller.has("admin") and over:
        viewer = "omniscient"
    else:
        viewer = "spectator"
        if delay and not over:
            # A live spectator sees the match `delay` seconds late, so a
            # player cannot be told the table by someone watching it.
            horizon = datetime.now(UTC) - timedelta(seconds=delay)
            events, _ = await matches.load(match_id)
            seen = [e for i, e in enumerate(events) if i == 0 or e.recorded_at <= horizon]
            if len(seen) != len(events):
                state = fold([e.event for e in seen], state.seed)
    return _Seen(viewer=viewer, hide_hands=hide_hands, over=over, state=state, horizon=horizon)


@get("/api/matches/{match_id:str}", operation_id="getMatch", tags=["matches"])
async def get_match(match_id: str, request: Request[Any, Any, Any]) -> MatchView:
    """The match as the caller may see it (a seat, a spectator, or an admin after the end)."""
    # Read, not injected: see _command.
    viewer = await maybe_player(request)
    state = request.app.state
    seen = await _load_for(state.matches, state.pool, match_id, viewer)
    return view(seen.state, seen.viewer, hide_hands_in_replay=seen.hide_hands)


@get("/api/matches/{match_id:str}/events", operation_id="getMatchEvents", tags=["matches"])
async def get_match_events(
    match_id: str,
    viewer: Player | None,
    matches: MatchService,
    pool: AsyncConnectionPool,
    after: Annotated[int, QueryParameter(ge=0)] = 0,
    limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 200,
) -> list[LogEntry]:
    """The match's log after version ``after``, redacted for the caller."""
    seen = await _load_for(matches, pool, match_id, viewer)
    page = await matches.store.load(match_id, after=after, limit=limit)
    if seen.horizon is not None:
        horizon = seen.horizon
        page = [e for e in page if e.version == 1 or e.recorded_at <= horizon]
    return [
        LogEntry(
            version=e.version,
            event=redact(
                e.event, seen.viewer, match_over=seen.over, hide_hands_in_replay=seen.hide_hands
            ),
            recorded_at=e.recorded_at,
            actor=e.actor,
            position=e.position,
        )
        for e in page
    ]


class MatchSummary(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    ladder_id: str | None
    ruleset: str
    players: tuple[str, str]
    status: Literal["live", "finished", "annulled"]
    hand: int
    tokens: tuple[dict[str, int], dict[str, int]]
    """Tokens won so far, per seat, by kind."""
    winner: int | None
    end_reason: str | None
    version: int
    created_at: datetime
    updated_at: datetime


def _summary(row: tuple[Any, ...]) -> MatchSummary:
    return MatchSummary(
        match_id=row[0],
        ladder_id=row[1],
        ruleset=row[2],
        players=(row[3], row[4]),
        status=row[5],
        hand=row[6],
        tokens=tuple(row[7]),  # type: ignore[arg-type]
        winner=row[8],
        end_reason=row[9],
        version=row[10],
        created_at=row[11],
        updated_at=row[12],
    )


@get("/api/matches", operation_id="listMatches", tags=["matches"], security=[])
async def list_matches(
    pool: AsyncConnectionPool,
    status: Annotated[
        Literal["live", "finished", "annulled"] | None, QueryParameter()
    ] = None,
    ladder: Annotated[str | None, QueryParameter()] = None,
    player_id: Annotated[str | None, QueryParameter(name="player")] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
) -> list[MatchSummary]:
    """Matches, most recently updated first, filtered by status, ladder and player."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            """SELECT match_id, ladder_id, ruleset, player0, player1, status, hand, tokens,
                      winner, end_reason, last_version, created_at, updated_at
                 FROM match_summaries
                WHERE (%(status)s::text IS NULL OR status = %(status)s)
                  AND (%(ladder)s::text IS NULL OR ladder_id = %(ladder)s)
                  AND (%(player)s::text IS NULL OR player0 = %(player)s OR player1 = %(player)s)
                ORDER BY updated_at DESC, match_id
                LIMIT %(limit)s""",
            {"status": status, "ladder": ladder, "player": player_id, "limit": limit},
        )
        return [_summary(r) for r in await cur.fetchall()]


ROUTES = [play, pass_, keep, resign, get_match, get_match_events, list_matches]
