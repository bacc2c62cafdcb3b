"""The application service for matches: start one, and run a seat's command.

One command, end to end (docs/architecture.md):

1. fold the match: this process's cached fold, used as it is when the
   client's expected version equals its version (optimistic: the append
   below is the check), else brought forward with the events after its
   version (``service.api.fold_cache``);
2. check the caller owns a seat, and the client's expected version;
3. ``engine.step`` (pure; raises ``RuleError`` with the rule's code);
4. ``store.append`` at the version the command was checked against, with the
   idempotency key and the match's ``match_summaries`` row: one durable
   transaction, one statement, one round trip. An append that finds the
   match moved on (the cache was stale) reloads and goes back to 2;
5. then the after-commit hooks (live publish, end-of-match jobs) with the
   rows the append returned. Best effort: a failure is logged and never
   fails the command; the events table is the truth.

Why this shape: bench/bench_api.py, docs/api.md "Performance" (one round
trip to PostgreSQL per command instead of four).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from schemas.cards import Card, Seat, Target
from schemas.commands import KeepCards, Pass, PlayCard, Resign, SeatCommand, StartMatch
from schemas.events import MatchCreated
from schemas.rules import RULESETS
from schemas.views import MatchView
from service.api.auth import Player, new_id
from service.api.fold_cache import FoldCache, Folded, advance, fold_from_start
from service.api.summaries import rebuild_match_summaries, upsert_statement
from service.engine import State, decide, fold, initial_state, step, view
from service.errors import Conflict, Forbidden, NotFound, RuleError, VersionConflict

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

SEED_CACHE_SIZE = 10_000

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
    """Starts matches and runs seat commands; ``after_commit`` hooks are
    registered by other parts at app start (``app.state.matches``)."""

    def __init__(self, pool: AsyncConnectionPool, store: EventStore) -> None:
        self.pool = pool
        self.store = store
        self.after_commit: list[AfterCommitHook] = []
        # A match's seed never changes once stored, so remembering it is safe
        # (bounded; an entry evicted is simply read again).
        self._seeds: OrderedDict[str, str | None] = OrderedDict()
        self._folds = FoldCache()

    async def seed_of(self, match_id: str) -> str | None:
        if match_id in self._seeds:
            self._seeds.move_to_end(match_id)
            return self._seeds[match_id]
        seed = await self.store.load_seed(match_id)
        if seed is not None:
            self._seeds[match_id] = seed
            while len(self._seeds) > SEED_CACHE_SIZE:
                self._seeds.popitem(last=False)
        return seed

    async def load(self, match_id: str) -> tuple[list[StoredEvent], State]:
        """Every stored event of the match and their fold; ``NotFound`` for an unknown match."""
        events = await self.store.load(match_id)
        if not events:
            raise NotFound("No match has this id.")
        seed = await self.seed_of(match_id)
        return events, fold([e.event for e in events], seed)

    async def current(self, match_id: str) -> Folded:
        """The match folded up to its latest version (``NotFound`` if unknown).

        Reads only the events after the version this process already folded
        (``service.api.fold_cache``).
        """
        cached = self._folds.get(match_id)
        after = cached.version if cached is not None else 0
        new = [e.event for e in await self.store.load(match_id, after=after)]
        if cached is None:
            if not new:
                raise NotFound("No match has this id.")
            folded = fold_from_start(new, await self.seed_of(match_id))
        else:
            folded = advance(cached, new)
        self._folds.put(folded)
        return folded

    async def start(
        self,
        *,
        players: tuple[str, str],
        ruleset: str,
        ladder_id: str | None,
        actor: str = "system",
        match_id: str | None = None,
        idempotency_key: str | None = None,
        request_hash: str | None = None,
    ) -> StartedMatch:
        """Create a match: a fresh secret seed, a random first dealer, the first deal.

        With ``idempotency_key`` (and the same ``match_id`` each time) a resend
        appends nothing and gets the first answer (``service.api.creates``).
        """
        match_id = match_id or new_id()
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
        folded = fold_from_start(events, seed)
        result = await self.store.append(
            match_id,
            0,
            events,
            actor=actor,
            seed=seed,
            idempotency_key=idempotency_key,
            request_hash=request_hash,
            also=[upsert_statement(folded.summary)],
        )
        if result.replayed:  # created before: the seed drawn here was never stored
            return StartedMatch(
                match_id=match_id,
                ladder_id=ladder_id,
                players=players,
                ruleset=ruleset,
                version=result.last_version,
            )
        self._seeds[match_id] = seed
        self._folds.put(folded)
        await self._after_commit(match_id, result.stored)
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
        folded = self._folds.get(match_id)
        # The cached fold is trusted only as far as the append will check it:
        # the append at its version fails if the match moved on. A client that
        # expects another version has seen a newer one (or an older one):
        # read what is there first, as the refusal must be about the truth.
        fresh = folded is None or (
            expected_version is not None and expected_version != folded.version
        )
        if fresh:
            folded = await self.current(match_id)
        assert folded is not None
        while True:
            seat = seat_of(folded.created, player.id)
            if seat is None:
                raise Forbidden("Only the two players of this match may act in it.")
            command = seat_command(body, seat)
            request_hash = command_hash(match_id, command) if idempotency_key else None
            version = folded.version
            try:
                if expected_version is not None and expected_version != version:
                    raise VersionConflict(
                        f"The match is at version {version}, not {expected_version};"
                        " reload and retry."
                    )
                new_state, new_events = step(folded.state, command)
            except (RuleError, VersionConflict):
                if not fresh:  # refused by a cached fold: judge again on the latest
                    folded, fresh = await self.current(match_id), True
                    continue
                # A retry of a command that already succeeded meets a state that
                # moved on: answer with the first result instead of the refusal.
                if idempotency_key is not None:
                    earlier = await self._earlier(match_id, player, idempotency_key, request_hash)
                    if earlier is not None:
                        return await self._replayed(match_id, seat, earlier)
                raise
            after = advance(folded, new_events)
            try:
                result = await self.store.append(
                    match_id,
                    version,
                    new_events,
                    actor=player.id,
                    idempotency_key=idempotency_key,
                    request_hash=request_hash,
                    also=[upsert_statement(after.summary)],
                )
            except VersionConflict:
                if fresh:
                    raise
                folded, fresh = await self.current(match_id), True
                continue
            break
        if result.replayed:
            return await self._replayed(match_id, seat, result.last_version)
        self._folds.put(after)
        await self._after_commit(match_id, result.stored)
        return CommandResult(
            version=result.last_version, view=view(new_state, seat, version=result.last_version)
        )

    async def _earlier(
        self, match_id: str, player: Player, key: str, request_hash: str | None
    ) -> int | None:
        """The last version a used idempotency key produced, or None if unused."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT match_id, request_hash, last_version FROM idempotency_keys"
                " WHERE actor = %s AND key = %s",
                (player.id, key),
            )
            row = await cur.fetchone()
        if row is None:
            return None
        if row[0] != match_id or row[1] != request_hash:
            raise Conflict(
                "This Idempotency-Key was already used for a different request.",
                code="idempotency_key_reused",
            )
        return int(row[2])

    async def _replayed(self, match_id: str, seat: Seat, last_version: int) -> CommandResult:
        """The first result of a repeated command: the view as it was right after it."""
        events, state = await self.load(match_id)
        if last_version != len(events):
            state = fold([e.event for e in events[:last_version]], state.seed)
        return CommandResult(version=last_version, view=view(state, seat, version=last_version))

    async def _after_commit(self, match_id: str, stored: Sequence[StoredEvent]) -> None:
        """Run the hooks with the rows the append wrote (no read back)."""
        if not self.after_commit or not stored:
            return
        rows = list(stored)
        for hook in self.after_commit:
            try:
                await hook(match_id, rows)
            except Exception:  # a hint channel must never fail a committed command
                log.exception("after-commit hook %r failed for match %s", hook, match_id)


def command_hash(match_id: str, command: SeatCommand) -> str:
    """What an idempotency key promises: the same command on the same match."""
    return hashlib.sha256(match_id.encode() + b"\0" + _encoder.encode(command)).hexdigest()


_encoder = msgspec.json.Encoder()
