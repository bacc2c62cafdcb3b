"""The one door from bot play to the match core (``service.matches.MatchCore``).

Every call bot play makes to the match core goes through this module, so when
the core changes it is re-pointed here and nowhere else. What comes out is
only ever a view the engine's observer (``service.engine.view``) built for one
viewer the viewer policy (``service.matches.seen_by``, ``public_sight``) chose:
the bot's own seat, or the public; or public facts (players, versions, whether the
match is over). Never the folded ``State``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import msgspec

from schemas.cards import Seat
from schemas.commands import Command, SeatCommand
from schemas.views import MatchView
from service.accounts.players import Player, caller_of
from service.engine import is_terminal, view
from service.errors import Forbidden
from service.matches import (
    Committed,
    Folded,
    MatchCore,
    MatchFacts,
    StartedMatch,
    public_sight,
    seen_by,
)


class CommitNote(msgspec.Struct, frozen=True, kw_only=True):
    """What bot play hears after each commit of any match: public facts only."""

    match_id: str
    players: tuple[str, str]
    version: int
    """The match's version after the commit."""


CommitHook = Callable[[CommitNote], Awaitable[None]]


class Visible(msgspec.Struct, frozen=True, kw_only=True):
    """What the viewer policy lets one caller see of a match now."""

    version: int
    """The latest version released to the caller (a delayed spectator's lags)."""
    latest: int
    """The match's latest version."""
    over: bool
    seat: Seat | None
    """The caller's own seat, if they play in this match."""


class MatchPort:
    def __init__(self, matches: MatchCore) -> None:
        self._matches = matches
        self._relays: dict[CommitHook, Callable[[Committed], Awaitable[None]]] = {}

    def on_commit(self, hook: CommitHook) -> None:
        """Call ``await hook(note)`` after every commit of any match."""

        async def relay(committed: Committed) -> None:
            last = committed.stored[-1].version if committed.stored else 0
            await hook(
                CommitNote(
                    match_id=committed.match_id, players=committed.facts.players, version=last
                )
            )

        self._relays[hook] = relay
        self._matches.after_commit.append(relay)

    def off_commit(self, hook: CommitHook) -> None:
        """Stop calling ``hook`` (a process that stops; tests of a lost hook)."""
        relay = self._relays.pop(hook, None)
        if relay is not None and relay in self._matches.after_commit:
            self._matches.after_commit.remove(relay)

    async def start(self, *, players: tuple[str, str], ruleset: str, actor: str) -> StartedMatch:
        """An unrated match (no ladder): a fresh secret seed, the first deal."""
        return await self._matches.start(
            players=players, ruleset=ruleset, ladder_id=None, actor=actor
        )

    async def players(self, match_id: str) -> tuple[str, str]:
        """``NotFound`` for an unknown match."""
        return (await self._matches.current(match_id)).created.players

    async def seat_view(self, match_id: str, seat: Seat) -> MatchView:
        """The match now, as the player in ``seat`` sees it."""
        folded = await self._matches.current(match_id)
        return view(folded.state, seat, version=folded.version)

    async def spectator_view(self, match_id: str, version: int | None = None) -> MatchView:
        """The match as the public saw it right after ``version`` (None: now),
        undelayed (``public_sight``): before the end that hides both hands and every
        unrevealed card; once the match is over the odds need only its result."""
        facts, latest = await self._matches.current_facts(match_id)
        folded = latest
        if version is not None and version < latest.version:
            folded = await self._matches.at_version(match_id, max(1, version))
        sight = public_sight(facts, over=is_terminal(folded.state))
        return view(
            folded.state, sight.viewer, version=folded.version, hide_hands_in_replay=sight.hide
        )

    async def visible(self, match_id: str, player: Player | None) -> Visible:
        """What the viewer policy releases to ``player`` (None: anonymous) now."""
        facts, folded = await self._matches.current_facts(match_id)
        over = is_terminal(folded.state)
        seen = seen_by(facts, caller_of(player), over=over, channel="view")
        version = folded.version
        if seen.delay_s:
            now = datetime.now(UTC)
            rows = await self._matches.log(match_id)
            released = [
                r.version for r in rows if r.version == 1 or seen.released(r.recorded_at, now)
            ]
            version = released[-1]
        return Visible(version=version, latest=folded.version, over=over, seat=seen.seat)

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

        def make(facts: MatchFacts, _: Folded) -> Command:
            if facts.seat_of(player.id) != command.seat:
                raise Forbidden("A bot plays only its own seat.")
            return command

        accepted = await self._matches.run(
            match_id,
            make,
            actor=player.id,
            expected_version=expected_version,
            idempotency_key=idempotency_key,
        )
        return accepted.version
