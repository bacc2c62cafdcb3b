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

This package imports only the engine, the store and the schemas; the API,
live streams, workers, audit and console are adapters around it.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import msgspec

from schemas.cards import Seat
from schemas.clocks import Clocks
from schemas.commands import (
    AnnulMatch,
    Command,
    DecideDispute,
    FileDispute,
    StartMatch,
    TimeOut,
)
from schemas.events import MatchAnnulled, MatchCreated, MatchEnded
from schemas.receipts import Receipt
from schemas.rules import RULESETS, MatchTerms
from service.cache import Bounded
from service.engine import clock, fold, is_terminal, step
from service.errors import (
    Conflict,
    Forbidden,
    MatchaError,
    NotFound,
    RuleError,
    VersionConflict,
)
from service.matches.deadlines import deadline_statement
from service.matches.facts import LadderTerms, MatchFacts, facts_of
from service.matches.folds import FoldCache, Folded, advance, fold_from_start, tallied
from service.matches.summaries import summarise, upsert_statement
from service.store import EventStore, StoredEvent

log = logging.getLogger("matcha.matches")

SEED_CACHE_SIZE = 10_000
FACTS_CACHE_SIZE = 10_000

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
    ruleset: str
    version: int


MakeCommand = Callable[[MatchFacts, Folded], Command]
"""Builds the command for this match from its facts and its current fold (the
caller's seat, say); may raise ``Forbidden``. Called again after a lost race."""


def new_id() -> str:
    return str(uuid.uuid4())


class MatchCore:
    """Starts matches and runs every command of a match (``app.state.matches``)."""

    def __init__(self, store: EventStore, *, ladder_terms: LadderTerms | None = None) -> None:
        self.store = store
        self.after_commit: list[AfterCommit] = []
        """Registered by the adapters at start (live publish, end-of-match work)."""
        self._ladder_terms = ladder_terms
        # A match's seed and facts never change once stored, so remembering them
        # is safe (bounded; an entry evicted is simply read again).
        self._seeds: Bounded[str, str] = Bounded(SEED_CACHE_SIZE)
        self._facts: Bounded[str, MatchFacts] = Bounded(FACTS_CACHE_SIZE)
        self._folds = FoldCache()
        self.observe: Observer | None = None
        self.now: Callable[[], datetime] = _utc_now
        """The instant a command is taken at (tests inject a clock here)."""

    # -- reads ---------------------------------------------------------------------

    async def seed_of(self, match_id: str) -> str | None:
        seed = self._seeds.get(match_id)
        if seed is None:
            seed = await self.store.load_seed(match_id)
            if seed is not None:
                self._seeds.put(match_id, seed)
        return seed

    async def facts(self, created: MatchCreated) -> MatchFacts:
        """The facts of the match that began with ``created`` (cached)."""
        known = self._facts.get(created.match_id)
        if known is None:
            known = await facts_of(created, self._ladder_terms)
            self._facts.put(created.match_id, known)
        return known

    async def current(self, match_id: str) -> Folded:
        """The match folded up to its latest version (``NotFound`` if unknown).

        Reads the cached version's row again with the rows after it: if its hash
        is no longer the one the cache was folded from, the log changed under
        the cache and the whole match is folded afresh.
        """
        cached = self._folds.get(match_id)
        if cached is not None:
            rows = await self.store.load(match_id, after=cached.version - 1)
            if rows and rows[0].version == cached.version and rows[0].hash == cached.head:
                folded = advance(cached, rows[1:])
                self._folds.put(folded)
                return folded
            self._folds.forget(match_id)
        rows = await self.store.load(match_id)
        if not rows:
            raise NotFound("No match has this id.")
        folded = fold_from_start(rows, await self.seed_of(match_id))
        self._folds.put(folded)
        return folded

    def cached(self, match_id: str) -> Folded | None:
        """The latest fold of the match this process holds, unchecked (no read): for a
        reader that knows which version it wants (a live seat's view at the version
        its stream has sent) and falls back to ``current`` otherwise."""
        return self._folds.get(match_id)

    async def current_facts(self, match_id: str) -> tuple[MatchFacts, Folded]:
        folded = await self.current(match_id)
        return await self.facts(folded.created), folded

    async def at_version(self, match_id: str, version: int) -> Folded:
        """The match as it was right after ``version`` (for a repeated command's answer)."""
        latest = await self.current(match_id)
        if version >= latest.version:
            return latest
        rows = await self.store.load(match_id, limit=version)
        return fold_from_start(rows, await self.seed_of(match_id))

    async def log(self, match_id: str) -> list[StoredEvent]:
        rows = await self.store.load(match_id)
        if not rows:
            raise NotFound("No match has this id.")
        return rows

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
        request_hash = _start_hash(players, ruleset, ladder_id) if idempotency_key else None
        if idempotency_key is not None:
            earlier = await self._started_before(actor, idempotency_key, request_hash)
            if earlier is not None:
                return earlier
        match_id = match_id or new_id()
        seed = secrets.token_hex(32)
        first_dealer: Seat = 1 if secrets.randbelow(2) else 0
        at = self.now()
        command = StartMatch(
            match_id=match_id,
            players=players,
            ruleset=RULESETS[ruleset],
            first_dealer=first_dealer,
            seed=seed,
            ladder_id=ladder_id,
            terms=terms,
            at=at,
        )
        started_state, events = step(fold([], seed), command)
        also = [upsert_statement(summarise(events))]
        deadline = deadline_statement(match_id, started_state, len(events))
        if deadline is not None:
            also.append(deadline)
        try:
            result = await self.store.append(
                match_id,
                0,
                events,
                actor=actor,
                seed=seed,
                idempotency_key=idempotency_key,
                request_hash=request_hash,
                also=also,
                recorded_at=at,
            )
        except Conflict:
            # The same key raced in from a second request, which won: its match.
            if idempotency_key is None:
                raise
            earlier = await self._started_before(actor, idempotency_key, request_hash)
            if earlier is None:
                raise
            return earlier
        self._seeds.put(match_id, seed)
        folded = fold_from_start(result.stored, seed)
        self._folds.put(folded)
        await self._after_commit(
            Committed(
                facts=await self.facts(folded.created),
                stored=result.stored,
                over_before=False,
                clocks=clock.clocks(folded.state, result.stored[-1].recorded_at),
            )
        )
        return _started(folded.created, len(events))

    async def _started_before(
        self, actor: str, key: str, request_hash: str | None
    ) -> StartedMatch | None:
        used = await self.store.used_key(actor, key)
        if used is None:
            return None
        if used[1] != request_hash:
            raise Conflict(
                "This Idempotency-Key was already used for a different request.",
                code="idempotency_key_reused",
            )
        folded = await self.current(used[0])
        return _started(folded.created, used[2])

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
        idempotency_key: str | None,
    ) -> Accepted:
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
        facts = await self.facts(folded.created)
        while True:
            command = msgspec.structs.replace(make(facts, folded), at=self.now())
            request_hash = command_hash(match_id, command) if idempotency_key else None
            version = folded.version
            try:
                if expected_version is not None and expected_version != version:
                    raise VersionConflict(
                        f"The match is at version {version}, not {expected_version};"
                        " reload and retry."
                    )
                new_state, new_events = step(folded.state, command)
            except (RuleError, VersionConflict) as refused:
                if not fresh:  # refused by a cached fold: judge again on the latest
                    folded, fresh = await self.current(match_id), True
                    continue
                if isinstance(refused, RuleError) and refused.code == "time_expired":
                    # Server-authoritative: the late command is refused and the
                    # time-out it found is recorded (once: at this version).
                    await self._record_time_out(match_id, command, version)
                # A retry of a command that already succeeded meets a state that
                # moved on: answer with the first result instead of the refusal.
                if idempotency_key is not None:
                    earlier = await self._earlier(match_id, actor, idempotency_key, request_hash)
                    if earlier is not None:
                        return await self._replayed(facts, match_id, earlier)
                raise
            summary = tallied(folded.summary, new_events)
            also = [upsert_statement(summary)]
            deadline = deadline_statement(match_id, new_state, version + len(new_events))
            if deadline is not None:
                also.append(deadline)
            try:
                result = await self.store.append(
                    match_id,
                    version,
                    new_events,
                    actor=actor,
                    idempotency_key=idempotency_key,
                    request_hash=request_hash,
                    also=also,
                    recorded_at=command.at,
                )
            except VersionConflict:
                if fresh:
                    raise
                folded, fresh = await self.current(match_id), True
                continue
            break
        if result.replayed:
            return await self._replayed(facts, match_id, result.last_version)
        after = Folded(
            created=folded.created,
            version=result.last_version,
            head=result.stored[-1].hash,
            state=new_state,
            summary=summary,
        )
        self._folds.put(after)
        await self._after_commit(
            Committed(
                facts=facts,
                stored=result.stored,
                over_before=is_terminal(folded.state),
                clocks=clock.clocks(new_state, result.stored[-1].recorded_at),
            )
        )
        return Accepted(
            facts=facts, version=result.last_version, folded=after, stored=result.stored
        )

    async def _earlier(
        self, match_id: str, actor: str, key: str, request_hash: str | None
    ) -> int | None:
        """The last version a used idempotency key produced, or None if unused."""
        used = await self.store.used_key(actor, key)
        if used is None:
            return None
        if used[0] != match_id or used[1] != request_hash:
            raise Conflict(
                "This Idempotency-Key was already used for a different request.",
                code="idempotency_key_reused",
            )
        return used[2]

    async def _replayed(self, facts: MatchFacts, match_id: str, last_version: int) -> Accepted:
        """The first result of a repeated command: the match as it was right after it."""
        folded = await self.at_version(match_id, last_version)
        row = await self.store.load(match_id, after=last_version - 1, limit=1)
        return Accepted(
            facts=facts, version=last_version, folded=folded, stored=tuple(row), replayed=True
        )

    async def _after_commit(self, committed: Committed) -> None:
        """Run the hooks with the rows the append wrote (no read back)."""
        for hook in list(self.after_commit):
            try:
                await hook(committed)
            except Exception:  # a hint channel must never fail a committed command
                log.exception("after-commit hook %r failed for match %s", hook, committed.match_id)

    # -- the commands that are not a seat's ------------------------------------------

    async def file_dispute(
        self, match_id: str, player_id: str, reason: str, receipts: tuple[Receipt, ...] = ()
    ) -> Accepted:
        """A player of a finished match disputes it, with the receipts they hold as
        evidence; the engine judges the window."""
        dispute_id = new_id()

        def make(facts: MatchFacts, _: Folded) -> Command:
            seat = facts.seat_of(player_id)
            if seat is None:
                raise Forbidden("Only the two players of this match may dispute it.")
            return FileDispute(
                dispute_id=dispute_id, seat=seat, player=player_id, reason=reason, receipts=receipts
            )

        return await self.run(match_id, make, actor=player_id)

    async def decide_dispute(
        self, dispute_id: str, admin_id: str, *, upheld: bool, reason: str
    ) -> Accepted:
        """Uphold (the match is annulled) or reject a dispute, with a written reason."""
        match_id = await self.store.dispute_match(dispute_id)
        if match_id is None:
            raise NotFound("No dispute has this id.", code="dispute_not_found")
        command = DecideDispute(dispute_id=dispute_id, upheld=upheld, admin=admin_id, reason=reason)
        return await self.run(match_id, lambda _f, _s: command, actor=admin_id)

    async def annul(self, match_id: str, admin_id: str, reason: str) -> Accepted:
        """Annul a match without a dispute, during play or after its end."""
        command = AnnulMatch(admin=admin_id, reason=reason)
        return await self.run(match_id, lambda _f, _s: command, actor=admin_id)

    async def time_out(
        self, match_id: str, seat: Seat, *, expected_version: int | None = None
    ) -> Accepted:
        """The clock: ``seat`` ran out of time (the engine checks that it did, at the
        instant the core stamps). ``expected_version``: the version the deadline was
        read at (the sweepers'): a second time-out of the same deadline is a
        ``VersionConflict``, never a second result."""
        command = TimeOut(seat=seat)
        return await self.run(
            match_id,
            lambda _f, _s: command,
            actor="system",
            expected_version=expected_version,
        )

    async def claim_time_out(self, match_id: str, player_id: str) -> Accepted:
        """A player claims the win: their opponent's clock ran out (lichess's
        "claim victory"). The engine refuses it if that clock has not run out."""

        def make(facts: MatchFacts, _: Folded) -> Command:
            seat = facts.seat_of(player_id)
            if seat is None:
                raise Forbidden("Only a player of this match may claim a time-out.")
            return TimeOut(seat=1 if seat == 0 else 0)

        return await self.run(match_id, make, actor=player_id)

    async def _record_time_out(self, match_id: str, late: Command, version: int) -> None:
        seat = getattr(late, "seat", None)
        if seat not in (0, 1):
            return
        try:
            await self.time_out(match_id, seat, expected_version=version)
        except MatchaError as exc:  # a sweeper (or another process) recorded it first
            log.info("time-out of %s seat %s not recorded here: %s", match_id, seat, exc.code)


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


def command_hash(match_id: str, command: Command) -> str:
    """What an idempotency key promises: the same command on the same match (its
    instant aside: a retry is taken later than the first try)."""
    timeless = msgspec.structs.replace(command, at=None)
    return hashlib.sha256(match_id.encode() + b"\0" + _encoder.encode(timeless)).hexdigest()


def _start_hash(players: tuple[str, str], ruleset: str, ladder_id: str | None) -> str:
    """What an idempotency key promises for a create: the same players, rules and ladder."""
    return hashlib.sha256(_encoder.encode(["start", players, ruleset, ladder_id])).hexdigest()


_encoder = msgspec.json.Encoder()
