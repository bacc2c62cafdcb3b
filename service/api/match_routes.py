"""Match commands (play, pass, keep, resign, claim a time-out) and reads (view, log, lists).

Thin adapters over the match core (``service.matches``): a command's body
(``service.matches.seats``, shared with the seat's live socket) becomes the
caller's seat command in ``MatchCore.run``; who is looking, and so
what they see, is the viewer policy's answer (``service.matches.policy``),
applied by the engine's observer (``view``/``redact``). Nothing here chooses
a viewer or knows a rule.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get, post
from litestar.params import HeaderParameter, QueryParameter
from psycopg_pool import AsyncConnectionPool

from schemas.bounds import INT32_MAX
from schemas.views import LogEntry, MatchView
from service.accounts.guards import current_player, maybe_player
from service.accounts.players import Player, caller_of
from service.engine import is_terminal, redact, view
from service.errors import ValidationFailed
from service.evidence.receipts import Receipt, receipt_of_answer
from service.matches import MatchCore, Seen, clocks
from service.matches.seats import (
    CommandBody,
    KeepBody,
    PassBody,
    PlayBody,
    ResignBody,
    answer_view,
    seat_maker,
    visible,
)
from service.ops.logging import set_player
from service.store import StoredEvent


class CommandResult(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    """The match's version after the command (the last event it appended)."""
    view: MatchView
    """The match as the caller sees it now."""
    receipt: Receipt | None = None
    """The service's signature of the log at ``version`` (docs/audit.md "Receipts")."""


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
    # The caller and the core are read here, not injected: two injected
    # dependencies make litestar resolve them in an anyio task group, which
    # cost about 7% of the API's CPU per request (docs/api.md "Performance").
    player = await current_player(request)
    set_player(player.name)
    core: MatchCore = request.app.state.matches
    accepted = await core.run(
        match_id,
        seat_maker(player.id, body),
        actor=player.id,
        expected_version=_expected_version(body, if_match),
        idempotency_key=idempotency_key,
    )
    return CommandResult(
        version=accepted.version,
        view=answer_view(accepted, caller_of(player)),
        receipt=receipt_of_answer(accepted),
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


@post(
    "/api/matches/{match_id:str}/time-out",
    operation_id="claimTimeOut",
    tags=["commands"],
    status_code=200,
)
async def claim_time_out(match_id: str, request: Request[Any, Any, Any]) -> CommandResult:
    """Claim the win: your opponent's clock ran out (409 ``time_not_expired`` if it
    has not). The sweepers record a time-out by themselves too; this is for a player
    who would rather not wait for them. On a no-show the match is aborted, unrated."""
    player = await current_player(request)
    set_player(player.name)
    core: MatchCore = request.app.state.matches
    accepted = await clocks.claim_time_out(core, match_id, player.id)
    return CommandResult(
        version=accepted.version,
        view=answer_view(accepted, caller_of(player)),
        receipt=receipt_of_answer(accepted),
    )


@get("/api/matches/{match_id:str}", operation_id="getMatch", tags=["matches"])
async def get_match(match_id: str, request: Request[Any, Any, Any]) -> MatchView:
    """The match as the caller may see it (a seat, a spectator, or an admin after the end)."""
    # Read, not injected: see _command.
    caller = await maybe_player(request)
    seen, folded, now = await visible(
        request.app.state.matches, match_id, caller_of(caller), "view"
    )
    # A delayed spectator sees the clocks as they stood at the last instant released to them.
    measured = now - timedelta(seconds=seen.delay_s) if seen.delay_s else now
    return view(
        folded.state,
        seen.viewer,
        version=folded.version,
        hide_hands_in_replay=seen.hide,
        now=measured,
    )


def log_entry(row: StoredEvent, seen: Seen, over: bool) -> LogEntry:
    """One row of a match's log as the policy's viewer sees it."""
    return LogEntry(
        version=row.version,
        event=redact(row.event, seen.viewer, match_over=over, hide_hands_in_replay=seen.hide),
        recorded_at=row.recorded_at,
        actor=row.actor,
        position=row.position,
    )


@get("/api/matches/{match_id:str}/events", operation_id="getMatchEvents", tags=["matches"])
async def get_match_events(
    match_id: str,
    viewer: Player | None,
    matches: MatchCore,
    after: Annotated[int, QueryParameter(ge=0, le=INT32_MAX)] = 0,
    limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 200,
) -> list[LogEntry]:
    """The match's log after version ``after``, redacted for the caller."""
    seen, folded, now = await visible(matches, match_id, caller_of(viewer), "log")
    over = is_terminal(folded.state)
    page = await matches.store.load(match_id, after=after, limit=limit)
    return [
        log_entry(row, seen, over)
        for row in page
        if row.version == 1 or seen.released(row.recorded_at, now)
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
        tokens=tuple(row[7]),
        winner=row[8],
        end_reason=row[9],
        version=row[10],
        created_at=row[11],
        updated_at=row[12],
    )


@get("/api/matches", operation_id="listMatches", tags=["matches"], security=[])
async def list_matches(
    pool: AsyncConnectionPool,
    status: Annotated[Literal["live", "finished", "annulled"] | None, QueryParameter()] = None,
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


ROUTES = [play, pass_, keep, resign, claim_time_out, get_match, get_match_events, list_matches]
