"""The match core: the one pipeline every command of a match takes.

Whoever sends it (a seat's play, pass, keep or resignation; a player's
dispute; an administrator's decision or annulment; the clock's time-out),
a command goes:

1. **fold**: this process's cached fold of the match, used as it is when the
   client's expected version equals its version (optimistic: the append
   below is the check), else brought forward with the rows after its version
   (``service.matches.folds``, keyed by version and chain head);
2. **decide**: the command is built for this match (the caller's seat, the
   dispute's filer) and stamped with the instant it was taken, then
   ``engine.step`` decides it (pure; raises ``RuleError`` with the rule's code);
3. **append** at the version it was decided against, with the idempotency key
   and the match's ``match_summaries`` row: one durable transaction, one
   statement, one round trip, every event recorded at the command's instant.
   An append that finds the match moved on (the cache was stale) reloads and
   decides again;
4. **after commit**: the typed hooks (``Committed``) run with the rows the
   append returned (live hints, end-of-match work). Best effort: a failure is
   logged and never fails the command; the events table is the truth.

The reads (the match folded now, its facts, its seed: three caches held to
the log) are ``service.matches.known``, which ``MatchCore`` extends; what an
idempotency key promises is ``service.matches.keys``; the commands that are
not a seat's take this pipeline through ``service.matches.disputes`` and
``service.matches.clocks``. This package imports only the engine, the store
and the schemas; the API, live streams, workers, audit and console are
adapters around it.
"""

from __future__ import annotations

import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from schemas.clocks import Clocks
from schemas.commands import Command, StartMatch, TimeOut
from schemas.events import Event, MatchAnnulled, MatchCreated, MatchEnded
from schemas.rules import RULESETS, MatchTerms, RulesetName
from service.engine import State, clock, fold, is_terminal, step
from service.errors import Conflict, MatchaError, RuleError, VersionConflict
from service.matches.deadlines import deadline_statement
from service.matches.facts import LadderTerms, MatchFacts
from service.matches.folds import Folded, fold_from_start, tallied
from service.matches.keys import command_hash, earlier_start, earlier_version, start_hash
from service.matches.known import Known
from service.matches.summaries import Summary, summarise, upsert_statement
from service.store import AppendResult, EventStore, StoredEvent

log = logging.getLogger("matcha.matches")

RETRIES_WITHOUT_EXPECTED_VERSION = 3
"""A caller that sent no expected version accepts whatever state is current, so
a lost race is retried against fresh state (the command is decided again)."""


class Committed(msgspec.Struct, frozen=True, kw_only=True):
    """What an after-commit hook is told: these rows of this match just committed."""

    facts: MatchFacts
    stored: tuple[StoredEvent, ...]
    """The rows the append wrote, in version order."""
    over_before: bool
    """The match was already over (ended or annulled) before these rows."""
    clocks: Clocks | None = None
    """Both clocks as these rows left them, measured at the last row's recorded
    time (None: an untimed match). Public: the live frames carry them."""
    summary: Summary | None = None
    """The match's ``match_summaries`` row after these rows (public: players, hand,
    tokens, result), as the core tallied it for the append; read-only. The lobby
    publish is made from it (no read of the log, and no copy of it per process)."""

    @property
    def match_id(self) -> str:
        return self.facts.match_id

    @property
    def over(self) -> bool:
        """The match is over (ended or annulled) after these rows."""
        return self.over_before or any(
            isinstance(s.event, MatchEnded | MatchAnnulled) for s in self.stored
        )


AfterCommit = Callable[[Committed], Awaitable[None]]
"""``await hook(committed)`` after a command's events committed."""

Observer = Callable[[str, str, str, float, str], None]
"""``observe(match_id, actor, kind, seconds, outcome)`` once per command run
(``service.ops.instrument``: metrics and the log context); ``outcome`` is
``ok`` or the refusal's code."""

AfterAppend = Callable[[int, bool], None]
"""``after_append(events, lost)`` once per append the core makes: how many events
it wrote (0: an idempotency key's replay), and whether it lost the race to
another append (a ``VersionConflict``; ``service.ops.instrument`` counts both)."""

_KINDS: dict[str, str] = {"play_card": "play", "keep_cards": "keep"}
"""A command's kind in metrics is its tag, shortened for the seat commands as
their routes name them (``/play``, ``/keep``)."""


class Accepted(msgspec.Struct, frozen=True, kw_only=True):
    """A command the rules accepted (or the first answer to a repeated one)."""

    facts: MatchFacts
    version: int
    """The match's version after the command (the last event it appended)."""
    folded: Folded
    """The match right after the command."""
    stored: tuple[StoredEvent, ...] = ()
    """The rows this command appended (for a replayed answer: the row at its version,
    which the receipt of that answer signs)."""
    replayed: bool = False
    """An idempotency key's retry: nothing was appended this time."""


class StartedMatch(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    ladder_id: str | None
    players: tuple[str, str]
    ruleset: RulesetName
    version: int


MakeCommand = Callable[[MatchFacts, Folded], Command]
"""Builds the command for this match from its facts and its current fold (the
caller's seat, say); may raise ``Forbidden``. Called again after a lost race."""


def new_id() -> str:
    return str(uuid.uuid4())


class MatchCore(Known):
    """Starts matches and runs every command of a match (``app.state.matches``);
    its reads are ``Known``'s."""

    def __init__(self, store: EventStore, *, ladder_terms: LadderTerms | None = None) -> None:
        super().__init__(store, ladder_terms=ladder_terms)
        self.after_commit: list[AfterCommit] = []
        """Registered by the adapters at start (live publish, end-of-match work)."""
        self.after_append: list[AfterAppend] = []
        """Told of every append (ops counts appended events and lost races)."""
        self.observe: Observer | None = None
        self.now: Callable[[], datetime] = _utc_now
        """The instant a command is taken at (tests inject a clock here)."""

    # -- start ---------------------------------------------------------------------

    async def start(
        self,
        *,
        players: tuple[str, str],
        ruleset: str,
        ladder_id: str | None,
        terms: MatchTerms | None = None,
        actor: str = "system",
        match_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> StartedMatch:
        """Create a match: a fresh secret seed, a random first dealer, the first deal.

        With an ``idempotency_key``, a resent create (same actor, key, players,
        rules and ladder) answers with the match the first one made. ``terms``
        left out are the ladder's (read through ``ladder_terms``).
        """
        if terms is None and ladder_id is not None and self._ladder_terms is not None:
            terms = await self._ladder_terms(ladder_id)
        request_hash = start_hash(players, ruleset, ladder_id) if idempotency_key else None
        if idempotency_key is not None:
            earlier = await self._started_before(actor, idempotency_key, request_hash)
            if earlier is not None:
                return earlier
        seed = secrets.token_hex(32)
        command = StartMatch(
            match_id=match_id or new_id(),
            players=players,
            ruleset=RULESETS[ruleset],
            first_dealer=1 if secrets.randbelow(2) else 0,
            seed=seed,
            ladder_id=ladder_id,
            terms=terms,
            at=self.now(),
        )
        started_state, events = step(fold([], seed), command)
        summary = summarise(events)
        try:
            result = await self._append(
                command.match_id,
                0,
                events,
                actor=actor,
                seed=seed,
                idempotency_key=idempotency_key,
                request_hash=request_hash,
                also=_also(command.match_id, started_state, len(events), summary),
                recorded_at=command.at,
            )
        except Conflict:
            # The same key raced in from a second request, which won: its match.
            if idempotency_key is None:
                raise
            earlier = await self._started_before(actor, idempotency_key, request_hash)
            if earlier is None:
                raise
            return earlier
        folded = fold_from_start(result.stored, seed)
        self.remember(folded, seed)
        facts = await self.facts(folded.created)
        await self._committed(facts, result, folded.state, False, summary)
        return _started(folded.created, len(events))

    async def _started_before(
        self, actor: str, key: str, request_hash: str | None
    ) -> StartedMatch | None:
        earlier = await earlier_start(self.store, actor, key, request_hash)
        if earlier is None:
            return None
        folded = await self.current(earlier[0])
        return _started(folded.created, earlier[1])

    # -- the pipeline --------------------------------------------------------------

    async def run(
        self,
        match_id: str,
        make: MakeCommand,
        *,
        actor: str,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Accepted:
        """Decide and append one command; see the module docstring."""
        observe = self.observe
        if observe is None:
            return await self._run(match_id, make, actor, expected_version, idempotency_key)
        kind = "unknown"

        def making(facts: MatchFacts, folded: Folded) -> Command:
            nonlocal kind
            command = make(facts, folded)
            tag = str(type(command).__struct_config__.tag)
            kind = _KINDS.get(tag, tag)
            return command

        started = time.perf_counter()
        outcome = "error"
        try:
            accepted = await self._run(match_id, making, actor, expected_version, idempotency_key)
            outcome = "ok"
            return accepted
        except MatchaError as refused:
            outcome = refused.code
            raise
        finally:
            observe(match_id, actor, kind, time.perf_counter() - started, outcome)

    async def _run(
        self,
        match_id: str,
        make: MakeCommand,
        actor: str,
        expected_version: int | None,
        idempotency_key: str | None,
    ) -> Accepted:
        attempts = 1 if expected_version is not None else RETRIES_WITHOUT_EXPECTED_VERSION
        for attempt in range(attempts):
            try:
                return await self._run_once(
                    match_id, make, actor, expected_version, idempotency_key
                )
            except VersionConflict:
                if attempt + 1 >= attempts:
                    raise
        raise AssertionError("unreachable")

    async def _run_once(
        self,
        match_id: str,
        make: MakeCommand,
        actor: str,
        expected_version: int | None,
        key: str | None,
    ) -> Accepted:
        """Fold, decide, append once; a cached fold refused or beaten is replaced by
        the latest (once), and the command decided again on it."""
        folded = self.cached(match_id)
        # The cached fold is trusted only as far as the append will check it:
        # the append at its version fails if the match moved on. A client that
        # expects another version has seen a newer one (or an older one):
        # read what is there first, as the refusal must be about the truth.
        fresh = folded is None or (
            expected_version is not None and expected_version != folded.version
        )
        if folded is None or fresh:
            folded = await self.current(match_id)
        facts = await self.facts(folded.created)
        while True:
            command = msgspec.structs.replace(make(facts, folded), at=self.now())
            request_hash = command_hash(match_id, command) if key else None
            try:
                new_state, new_events = _decide(folded, command, expected_version)
            except (RuleError, VersionConflict) as refused:
                if not fresh:  # refused by a cached fold: judge again on the latest
                    folded, fresh = await self.current(match_id), True
                    continue
                answer = await self._after_refusal(
                    match_id, facts, command, folded.version, refused, actor, key, request_hash
                )
                if answer is None:
                    raise
                return answer
            summary = tallied(folded.summary, new_events)
            version = folded.version + len(new_events)
            try:
                result = await self._append(
                    match_id,
                    folded.version,
                    new_events,
                    actor=actor,
                    idempotency_key=key,
                    request_hash=request_hash,
                    also=_also(match_id, new_state, version, summary),
                    recorded_at=command.at,
                )
            except VersionConflict:
                if fresh:
                    raise
                folded, fresh = await self.current(match_id), True
                continue
            if result.replayed:
                return await self._replayed(facts, match_id, result.last_version)
            return await self._accepted(facts, folded, new_state, summary, result)

    async def _after_refusal(
        self,
        match_id: str,
        facts: MatchFacts,
        command: Command,
        version: int,
        refused: MatchaError,
        actor: str,
        key: str | None,
        request_hash: str | None,
    ) -> Accepted | None:
        """What a command the latest fold refused still does: a late command records
        the time-out it found; a resent one answers with its first result. None: the
        refusal stands."""
        if isinstance(refused, RuleError) and refused.code == "time_expired":
            # Server-authoritative: the late command is refused and the time-out
            # it found is recorded (once: at this version).
            await self._record_time_out(match_id, command, version)
        # A retry of a command that already succeeded meets a state that moved on:
        # answer with the first result instead of the refusal.
        if key is None:
            return None
        earlier = await earlier_version(self.store, match_id, actor, key, request_hash)
        if earlier is None:
            return None
        return await self._replayed(facts, match_id, earlier)

    async def _append(
        self, match_id: str, expected_version: int, events: Sequence[Event], **options: Any
    ) -> AppendResult:
        """``store.append``, and the ``after_append`` observers told how it went."""
        try:
            result = await self.store.append(match_id, expected_version, events, **options)
        except VersionConflict:
            for lost in self.after_append:
                lost(0, True)
            raise
        for appended in self.after_append:
            appended(0 if result.replayed else len(events), False)
        return result

    async def _accepted(
        self,
        facts: MatchFacts,
        before: Folded,
        state: State,
        summary: Summary,
        result: AppendResult,
    ) -> Accepted:
        after = Folded(
            created=before.created,
            version=result.last_version,
            head=result.stored[-1].hash,
            state=state,
            summary=summary,
        )
        self.remember(after)
        await self._committed(facts, result, state, is_terminal(before.state), summary)
        return Accepted(
            facts=facts, version=result.last_version, folded=after, stored=result.stored
        )

    async def _replayed(self, facts: MatchFacts, match_id: str, last_version: int) -> Accepted:
        """The first result of a repeated command: the match as it was right after it."""
        folded = await self.at_version(match_id, last_version)
        row = await self.store.load(match_id, after=last_version - 1, limit=1)
        return Accepted(
            facts=facts, version=last_version, folded=folded, stored=tuple(row), replayed=True
        )

    async def _committed(
        self,
        facts: MatchFacts,
        result: AppendResult,
        state: State,
        over_before: bool,
        summary: Summary,
    ) -> None:
        """Run the after-commit hooks with the rows the append wrote (no read back)."""
        committed = Committed(
            facts=facts,
            stored=result.stored,
            over_before=over_before,
            clocks=clock.clocks(state, result.stored[-1].recorded_at),
            summary=summary,
        )
        for hook in list(self.after_commit):
            try:
                await hook(committed)
            except Exception:  # a hint channel must never fail a committed command
                log.exception("after-commit hook %r failed for match %s", hook, committed.match_id)

    async def _record_time_out(self, match_id: str, late: Command, version: int) -> None:
        seat = getattr(late, "seat", None)
        if seat not in (0, 1):
            return
        time_out = TimeOut(seat=seat)
        try:
            await self.run(
                match_id, lambda _f, _s: time_out, actor="system", expected_version=version
            )
        except MatchaError as exc:  # a sweeper (or another process) recorded it first
            log.info("time-out of %s seat %s not recorded here: %s", match_id, seat, exc.code)


def _decide(
    folded: Folded, command: Command, expected_version: int | None
) -> tuple[State, list[Event]]:
    """The engine's decision on the fold, at the version the client expects."""
    if expected_version is not None and expected_version != folded.version:
        raise VersionConflict(
            f"The match is at version {folded.version}, not {expected_version}; reload and retry."
        )
    return step(folded.state, command)


def _also(
    match_id: str, state: State, version: int, summary: Summary
) -> list[tuple[str, Sequence[Any]]]:
    """What commits with an append: the match's ``match_summaries`` row and, for a
    timed match, its next deadline (``match_deadlines``)."""
    also: list[tuple[str, Sequence[Any]]] = [upsert_statement(summary)]
    deadline = deadline_statement(match_id, state, version)
    if deadline is not None:
        also.append(deadline)
    return also


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _started(created: MatchCreated, version: int) -> StartedMatch:
    return StartedMatch(
        match_id=created.match_id,
        ladder_id=created.ladder_id,
        players=created.players,
        ruleset=created.ruleset.name,
        version=version,
    )


__all__ = [
    "Accepted",
    "AfterAppend",
    "AfterCommit",
    "Committed",
    "MakeCommand",
    "MatchCore",
    "StartedMatch",
    "command_hash",
    "new_id",
]
