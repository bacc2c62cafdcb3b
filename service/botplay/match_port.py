"""The one door from bot play to the match core.

Every call bot play makes to ``service.matches.MatchService`` goes through
this module, so when the match core moves (to ``service/matches/``) it is
re-pointed here and nowhere else. What comes out is only ever a view built
by the engine's observer (``service.engine.view``) for one viewer (the bot's
seat, or a live spectator), or public facts (players, ladder, version,
whether the match is over): never the folded ``State``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from schemas.cards import Seat
from schemas.commands import KeepCards, Pass, PlayCard, Resign, SeatCommand
from schemas.events import MatchCreated
from schemas.views import MatchView
from service.api.auth import Player
from service.engine import State, fold, is_terminal, view
from service.matches import KeepBody, MatchService, PassBody, PlayBody, ResignBody, StartedMatch

if TYPE_CHECKING:
    from service.store import StoredEvent

CommitHook = Callable[[str, "list[StoredEvent]"], Awaitable[None]]


class MatchFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What anyone may know of a match without seeing it."""

    match_id: str
    players: tuple[str, str]
    ladder_id: str | None
    version: int
    over: bool


class MatchPort:
    def __init__(self, matches: MatchService) -> None:
        self._matches = matches

    def on_commit(self, hook: CommitHook) -> None:
        """Call ``await hook(match_id, stored_events)`` after every commit of any match."""
        self._matches.after_commit.append(hook)

    async def start(self, *, players: tuple[str, str], ruleset: str, actor: str) -> StartedMatch:
        """An unrated match (no ladder): a fresh secret seed, the first deal."""
        return await self._matches.start(
            players=players, ruleset=ruleset, ladder_id=None, actor=actor
        )

    async def facts(self, match_id: str) -> MatchFacts:
        """``NotFound`` for an unknown match."""
        folded = await self._matches.current(match_id)
        return MatchFacts(
            match_id=match_id,
            players=folded.created.players,
            ladder_id=folded.created.ladder_id,
            version=folded.version,
            over=is_terminal(folded.state),
        )

    async def seat_view(self, match_id: str, seat: Seat) -> MatchView:
        """The match now, as the player in ``seat`` sees it."""
        folded = await self._matches.current(match_id)
        return view(folded.state, seat, version=folded.version)

    async def spectator_view(self, match_id: str, version: int | None = None) -> MatchView:
        """The match as a live spectator saw it at ``version`` (None: now).

        Before the end that hides both hands and every unrevealed card; at the
        last version of a finished match it is the result (which is public).
        """
        folded = await self._matches.current(match_id)
        if version is None or version >= folded.version:
            return _spectators(folded.state, folded.version)
        events, state = await self._matches.load(match_id)
        version = max(1, version)
        return _spectators(fold([e.event for e in events[:version]], state.seed), version)

    async def visible_version(self, match_id: str, horizon: datetime) -> int:
        """The last version recorded by ``horizon`` (the first is always visible): what
        a spectator kept ``delay`` seconds behind may see."""
        events, _ = await self._matches.load(match_id)
        seen = [e.version for e in events if e.version == 1 or e.recorded_at <= horizon]
        return seen[-1]

    async def send(
        self,
        match_id: str,
        player: Player,
        command: SeatCommand,
        *,
        expected_version: int,
        idempotency_key: str,
    ) -> int:
        """Run ``player``'s command at ``expected_version``; the version after it.

        ``VersionConflict`` if the match moved on, ``RuleError`` if the rules
        refuse it, as for any player.
        """
        result = await self._matches.handle(
            match_id, player, _body(command, expected_version), expected_version, idempotency_key
        )
        return result.version


def _spectators(state: State, version: int) -> MatchView:
    # Once the match is over a spectator may see every card (the replay); odds
    # need only the result, so the hands stay hidden here all the same.
    return view(state, "spectator", version=version, hide_hands_in_replay=is_terminal(state))


def _body(
    command: SeatCommand, expected_version: int
) -> PlayBody | PassBody | KeepBody | ResignBody:
    match command:
        case PlayCard(card=card, target=target):
            return PlayBody(card=card, target=target, expected_version=expected_version)
        case Pass():
            return PassBody(expected_version=expected_version)
        case KeepCards(cards=cards):
            return KeepBody(cards=cards, expected_version=expected_version)
        case Resign():
            return ResignBody(expected_version=expected_version)
    raise AssertionError(f"unexpected command {command!r}")


def players_in(stored: Sequence[StoredEvent]) -> tuple[str, str] | None:
    """The players of a match, when this commit created it (else None)."""
    for row in stored:
        if isinstance(row.event, MatchCreated):
            return row.event.players
    return None
