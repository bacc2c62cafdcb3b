"""The one door between tournaments and the match core (CONTRACTS 4).

Everything the tournament part asks of matches goes through here, so that
the tournament part depends on the match core (``service.matches``) here only:

* ``start_game``: create a game's match on the tournament's ladder (its
  ruleset; the ladder's time control once clocks exist), idempotently: the
  match id is the game's, so a second start is a conflict and ignored;
* ``unstarted_games``: games paired whose match has no events yet (a lost
  after-commit hook, a process killed between the two commits);
* ``on_match_commit``: register a hook that sees every match commit;
* ``RESULT_TYPES`` and ``command_for``: which match events the results
  runner reads from the global log, and the tournament command each becomes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Final

import msgspec
from psycopg import AsyncConnection

from schemas.cards import Seat
from schemas.events import MatchAnnulled, MatchEnded
from schemas.tournaments import AnnulResult, RecordResult
from service.errors import VersionConflict
from service.matches import Committed, MatchCore
from service.store import StoredEvent, matchlog
from service.store.ops import run_async

RESULT_TYPES: Final = ("match_ended", "match_annulled")


class GameToStart(msgspec.Struct, frozen=True, kw_only=True):
    tournament_id: str
    match_id: str
    players: tuple[str, str]
    ladder_id: str
    ruleset: str


async def start_game(matches: MatchCore, game: GameToStart) -> bool:
    """Start the game's match; False if it had been started already."""
    try:
        await matches.start(
            players=game.players,
            ruleset=game.ruleset,
            ladder_id=game.ladder_id,
            actor=f"tournament:{game.tournament_id}",
            match_id=game.match_id,
        )
    except VersionConflict:
        return False
    return True


async def unstarted_games(conn: AsyncConnection[Any], limit: int = 500) -> list[GameToStart]:
    """Open games of running tournaments whose match does not exist yet."""
    # Every open game (a few per running tournament: the index
    # tournament_games_open), then the log says which matches exist.
    cur = await conn.execute(
        """SELECT g.tournament_id, g.match_id, g.player0, g.player1, t.ladder_id,
                  t.settings ->> 'ruleset'
           FROM tournament_games g JOIN tournaments t ON t.id = g.tournament_id
           WHERE g.result IS NULL AND NOT g.annulled AND g.match_id IS NOT NULL
             AND t.phase = 'running'
           ORDER BY g.tournament_id, g.game"""
    )
    games = await cur.fetchall()
    begun = await run_async(conn, matchlog.started([r[1] for r in games]))
    return [
        GameToStart(
            tournament_id=r[0], match_id=r[1], players=(r[2], r[3]), ladder_id=r[4], ruleset=r[5]
        )
        for r in games
        if r[1] not in begun
    ][:limit]


def on_match_commit(
    matches: MatchCore, hook: Callable[[str, list[StoredEvent]], Awaitable[None]]
) -> None:
    async def after_commit(committed: Committed) -> None:
        await hook(committed.match_id, list(committed.stored))

    matches.after_commit.append(after_commit)


def ends_a_match(stored: list[StoredEvent]) -> bool:
    return any(e.type in RESULT_TYPES for e in stored)


def command_for(stored: StoredEvent, at: datetime) -> RecordResult | AnnulResult | None:
    """The tournament command a match's end or annulment becomes."""
    event = stored.event
    if isinstance(event, MatchEnded):
        # An abort names the seat that did not show: its forfeit in the tournament.
        forfeit: Seat | None = None if event.no_show is msgspec.UNSET else event.no_show
        return RecordResult(
            at=at,
            match_id=stored.match_id,
            winner=event.winner,
            reason=str(event.reason),
            forfeit=forfeit,
        )
    if isinstance(event, MatchAnnulled):
        return AnnulResult(at=at, match_id=stored.match_id)
    return None
