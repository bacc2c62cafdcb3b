"""The application service for matches: start one, and run a seat's command.

One command, end to end (docs/architecture.md):

1. load the match's events (and seed) from the store, fold them;
2. check the caller owns a seat, and the client's expected version;
3. ``engine.decide`` (pure; raises ``RuleError`` with the rule's code);
4. ``store.append`` at the version the command was checked against, with the
   idempotency key; then the ``match_summaries`` projection;
5. after commit, the hooks (live publish, end-of-match jobs): best effort,
   a failing hook is logged and never fails the command; the table is the truth.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from schemas.cards import Card, Seat, Target
from schemas.commands import KeepCards, Pass, PlayCard, Resign, SeatCommand, StartMatch
from schemas.events import MatchCreated
from schemas.rules import RULESETS
from schemas.views import MatchView
from service.api.auth import Player, new_id
from service.api.summaries import rebuild_match_summaries, save_summary, summarise
from service.engine import decide, evolve, fold, initial_state, view
from service.errors import Forbidden, NotFound, VersionConflict

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from service.store import EventStore, StoredEvent

log = logging.getLogger("matcha.matches")

__all__ = [
    "AfterCommitHook",
    "CommandResult",
    "KeepBody",
    "MatchService",
    "PassBody",
    "PlayBody",
    "ResignBody",
    "rebuild_match_summaries",
]

AfterCommitHook = Callable[[str, "list[StoredEvent]"], Awaitable[None]]
"""``await hook(match_id, stored_events)`` after a command's events committed."""

RETRIES_WITHOUT_EXPECTED_VERSION = 3
"""A client that sent no expected version accepts whatever state is current, so
a lost race is retried against fresh state (the command is re-decided)."""


# The bodies of the four seat commands. The seat is never in a body: it is the
# caller's seat in this match.
class PlayBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    card: Card
    target: Target
    expected_version: int | None = None


class PassBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    expected_version: int | None = None


class KeepBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    cards: tuple[Card, ...] = ()
    expected_version: int | None = None


class ResignBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    expected_version: int | None = None


CommandBody = PlayBody | PassBody | KeepBody | ResignBody


def seat_command(body: CommandBody, seat: Seat) -> SeatCommand:
    match body:
        case PlayBody(card=card, target=target):
            return PlayCard(seat=seat, card=card, target=target)
        case PassBody():
            return Pass(seat=seat)
        case KeepBody(cards=cards):
            return KeepCards(seat=seat, cards=cards)
        case ResignBody():
            return Resign(seat=seat)


class CommandResult(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    """The match's version after the command (the last event it appended)."""
    view: MatchView
    """The match as the caller sees it now."""


class StartedMatch(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    ladder_id: str | None
    players: tuple[str, str]
    ruleset: str
    version: int


def seat_of(created: MatchCreated, player_id: str) -> Seat | None:
    if created.players[0] == player_id:
        return 0
    if created.players[1] == player_id:
        return 1
    return None


class MatchService:
    def __init__(self, pool: AsyncConnectionPool, store: EventStore) -> None:
        self.pool = pool
        self.store = store
        self.after_commit: list[AfterCommitHook] = []

    async def start(
        self, *, players: tuple[str, str], ruleset: str, ladder_id: str | None
    ) -> StartedMatch:
        """Create a match: a fresh secret seed, a random first dealer, the first deal."""
        match_id = new_id()
        seed = secrets.token_hex(32)
        first_dealer: Seat = 1 if secrets.randbelow(2) else 0
        command = StartMatch(
            match_id=match_id,
            players=players,
            ruleset=RULESETS[ruleset],
            first_dealer=first_dealer,
            seed=seed,
            ladder_id=ladder_id,
        )
        events = decide(initial_state(seed), command)
        stored = await self.store.append(match_id, 0, events, seed=seed)
        await self._project(match_id, events)
        await self._after_commit(match_id, stored)
        return StartedMatch(
            match_id=match_id,
            ladder_id=ladder_id,
            players=players,
            ruleset=ruleset,
            version=len(events),
        )

    async def handle(
        self,
        match_id: str,
        player: Player,
        command_body: CommandBody,
        expected_version: int | None,
        idempotency_key: str | None,
    ) -> CommandResult:
        """Run one seat command for ``player``; see the module docstring."""
        attempts = 1 if expected_version is not None else RETRIES_WITHOUT_EXPECTED_VERSION
        for attempt in range(attempts):
            try:
                return await self._handle_once(
                    match_id, player, command_body, expected_version, idempotency_key
                )
            except VersionConflict:
                if attempt + 1 >= attempts:
                    raise
        raise AssertionError("unreachable")

    async def _handle_once(
        self,
        match_id: str,
        player: Player,
        body: CommandBody,
        expected_version: int | None,
        idempotency_key: str | None,
    ) -> CommandResult:
        events = await self.store.load(match_id)
        if not events:
            raise NotFound("No match has this id.")
        created = events[0].event
        assert isinstance(created, MatchCreated)
        seat = seat_of(created, player.id)
        if seat is None:
            raise Forbidden("Only the two players of this match may act in it.")
        version = len(events)
        seed = await self.store.load_seed(match_id)
        state = fold([e.event for e in events], seed)
        if expected_version is not None and expected_version != version:
            raise VersionConflict(
                f"The match is at version {version}, not {expected_version}; reload and retry."
            )
        new_events = decide(state, seat_command(body, seat))
        stored = await self.store.append(
            match_id, version, new_events, actor=player.id, idempotency_key=idempotency_key
        )
        for event in new_events:
            state = evolve(state, event)
        await self._project(match_id, [e.event for e in events] + list(new_events))
        await self._after_commit(match_id, stored)
        return CommandResult(version=version + len(new_events), view=view(state, seat))

    async def _project(self, match_id: str, events: Sequence[Any]) -> None:
        async with self.pool.connection() as conn:
            await save_summary(conn, summarise(events))

    async def _after_commit(self, match_id: str, stored: list[StoredEvent]) -> None:
        for hook in self.after_commit:
            try:
                await hook(match_id, stored)
            except Exception:  # a hint channel must never fail a committed command
                log.exception("after-commit hook %r failed for match %s", hook, match_id)
