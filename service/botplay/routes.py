"""Practice against a bot, the bots' levels, and the spectators' win probability.

* ``POST /api/practice``: start an unrated match against the bot of a level;
* ``GET /api/bots``: the levels, weakest first, with each bot's player id;
* ``GET /api/matches/{id}/win-probability``: each seat's chance to win, as
  estimated from a live spectator's view after the latest event a spectator
  may see (``?version=N``: after event N, for the replay's bar).
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get, post
from litestar.params import QueryParameter

from schemas.bounds import INT32_MAX
from schemas.cards import Seat
from schemas.rules import RulesetName
from service.accounts.guards import maybe_player
from service.accounts.players import Player
from service.botplay.accounts import BOT_ROLE
from service.botplay.state import BotPlay
from service.bots.levels import LEVELS
from service.errors import Conflict, Forbidden, NotFound, Unavailable

LevelName = Literal["beginner", "casual", "strong", "master"]
assert set(LevelName.__args__) == set(LEVELS), "the route's levels are the bots' levels"  # type: ignore[attr-defined]


class PracticeBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    level: LevelName
    ruleset: RulesetName = "standard"
    seat: Seat | None = None
    """The seat to play (0 or 1); left out, one is drawn at random."""


class BotInfo(msgspec.Struct, frozen=True, kw_only=True):
    level: str
    player_id: str
    name: str
    playouts: int
    """Playouts a move (the level's budget)."""
    description: str


class PracticeMatch(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    ruleset: str
    players: tuple[str, str]
    seat: Seat
    """Your seat; the bot has the other."""
    bot: BotInfo
    version: int
    rated: bool = False


class WinProbabilityAnswer(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    version: int
    """The version estimated: the latest a spectator may see, or an earlier one
    while the estimate of the latest is being computed."""
    p: tuple[float, float]
    """Each seat's chance to win."""
    draw: float
    """The chance of a draw (``1 - p0 - p1``)."""
    playouts: int
    """Positions played out (0: the match is over and ``p`` is its result)."""
    computed_at: datetime
    visible_version: int
    """The latest version the caller may see (``version`` lags it while the next
    estimate is computed)."""


def _botplay(request: Request[Any, Any, Any]) -> BotPlay:
    botplay: BotPlay = request.app.state.botplay
    return botplay


def _info(botplay: BotPlay, level: str) -> BotInfo:
    account = botplay.accounts.by_level[level]
    spec = LEVELS[level]
    return BotInfo(
        level=level,
        player_id=account.player_id,
        name=account.name,
        playouts=spec.budget.playouts,
        description=spec.description,
    )


@get("/api/bots", operation_id="listBots", tags=["practice"], security=[])
async def list_bots(request: Request[Any, Any, Any]) -> list[BotInfo]:
    """The bots to practise against, weakest first."""
    botplay = _botplay(request)
    return [_info(botplay, level) for level in LEVELS if level in botplay.accounts.by_level]


@post("/api/practice", operation_id="startPractice", tags=["practice"], status_code=201)
async def start_practice(
    data: PracticeBody, player: Player, request: Request[Any, Any, Any]
) -> PracticeMatch:
    """Start an unrated match against the bot of a level; the bot moves by itself.

    Open the match like any other (``GET /api/matches/{id}``, its live stream);
    resign to leave it. At most a few unfinished practice matches per player.
    """
    botplay = _botplay(request)
    if not botplay.settings.bots:
        raise Unavailable("Practice against the bots is switched off on this server.")
    if player.has(BOT_ROLE):
        raise Forbidden("A bot does not practise against a bot.")
    account = botplay.accounts.by_level.get(data.level)
    if account is None:
        raise Unavailable(f"The {data.level} bot is not available yet; try again shortly.")
    limit = botplay.settings.live_practice_per_player
    async with request.app.state.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM match_summaries WHERE status = 'live'"
            " AND ((player0 = %(me)s AND player1 = ANY(%(bots)s))"
            "   OR (player1 = %(me)s AND player0 = ANY(%(bots)s)))",
            {"me": player.id, "bots": botplay.accounts.player_ids},
        )
        row = await cur.fetchone()
    if row is not None and row[0] >= limit:
        raise Conflict(
            f"You have {row[0]} unfinished practice matches (at most {limit}):"
            " finish or resign one first.",
            code="too_many_practice_matches",
        )
    seat: Seat = data.seat if data.seat is not None else (1 if secrets.randbelow(2) else 0)
    players = (player.id, account.player_id) if seat == 0 else (account.player_id, player.id)
    started = await botplay.port.start(players=players, ruleset=data.ruleset, actor=player.id)
    return PracticeMatch(
        match_id=started.match_id,
        ruleset=started.ruleset,
        players=started.players,
        seat=seat,
        bot=_info(botplay, data.level),
        version=started.version,
    )


@get(
    "/api/matches/{match_id:str}/win-probability",
    operation_id="getWinProbability",
    tags=["matches"],
)
async def get_win_probability(
    match_id: str,
    request: Request[Any, Any, Any],
    version: Annotated[int | None, QueryParameter(ge=1, le=INT32_MAX)] = None,
) -> WinProbabilityAnswer:
    """Each seat's chance to win, from what a live spectator may see, and nothing else.

    Refused to the players of a match while it is being played (no engine at
    the table); a ladder's spectator delay holds it back as it holds back the
    view. ``404 estimate_pending`` while the first estimate is computed.
    """
    botplay = _botplay(request)
    if not botplay.settings.odds:
        raise Unavailable("The win probability is switched off on this server.")
    caller = await maybe_player(request)
    visible = await botplay.port.visible(match_id, caller)
    if visible.seat is not None and not visible.over:
        raise Forbidden(
            "The players of a match do not get the odds while they play it.",
            code="no_odds_for_players",
        )
    wanted = visible.version if version is None else min(version, visible.version)
    if visible.over:
        stored = await _replay_odds(request, match_id, wanted)
        if stored is not None:
            return stored
    else:
        await botplay.odds.watch(match_id)  # from now on, an estimate after each event
    found = await botplay.odds.store.latest(match_id, wanted)
    if found is None or found.version < wanted:
        botplay.odds.poke(match_id, None if wanted == visible.latest else wanted)
    if found is None:
        raise NotFound(
            "No estimate of this match yet: ask again in a moment.", code="estimate_pending"
        )
    return WinProbabilityAnswer(
        match_id=match_id,
        version=found.version,
        p=found.p,
        draw=round(max(0.0, 1.0 - found.p[0] - found.p[1]), 6),
        playouts=found.playouts,
        computed_at=found.computed_at,
        visible_version=wanted,
    )


_REPLAY_ODDS = (
    "SELECT p0, p1, playouts, computed_at FROM replay_odds WHERE match_id = %s AND version = %s"
)


async def _replay_odds(
    request: Request[Any, Any, Any], match_id: str, version: int
) -> WinProbabilityAnswer | None:
    """A finished match's version from the replay's odds (``workers.projections.odds``:
    estimated from the spectator's view at that version, like the live odds), if
    the worker has estimated it yet."""
    async with request.app.state.pool.connection() as conn:
        cur = await conn.execute(_REPLAY_ODDS, (match_id, version))
        row = await cur.fetchone()
    if row is None:
        return None
    p0, p1, playouts, computed_at = row
    return WinProbabilityAnswer(
        match_id=match_id,
        version=version,
        p=(float(p0), float(p1)),
        draw=round(max(0.0, 1.0 - p0 - p1), 6),
        playouts=int(playouts),
        computed_at=computed_at,
        visible_version=version,
    )


ROUTES = [list_bots, start_practice, get_win_probability]
