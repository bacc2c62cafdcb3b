"""A per-process cache of folded matches, keyed by match, version and chain head.

Why: a command or a view used to read and decode every event of its match
and fold them all; with this cache it reads only the events after the
version it already folded (usually none or one command's worth), which cut
the API's CPU per command (bench/bench_api.py, docs/api.md "Performance").

Why it is always right: events are append-only, so the fold of a match at
version ``v`` never changes; an entry is the fold at its recorded version and
remembers the hash of that version's row (the chain head it was folded from).
A reader brings it forward with the rows read from the store from version
``v`` on, and starts again from the first event when the row at ``v`` no
longer carries that hash: a log changed under the cache (docs/audit.md) is
folded afresh, never hidden behind a cached fold. Several API processes may
each cache the same match. tests/api/test_fold_cache.py checks an entry
equals the fold of the whole log after every command, with two processes
taking turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from schemas.events import Event, MatchCreated
from service.cache import Bounded
from service.engine import State, evolve, fold
from service.errors import LogInconsistent, MatchaError
from service.matches.summaries import Summary, summarise, tally

FOLD_CACHE_SIZE = 10_000


class Folded(msgspec.Struct, frozen=True, kw_only=True):
    """A match folded up to ``version``: its state, its summary, how it began."""

    created: MatchCreated
    version: int
    head: bytes
    """The hash of the row at ``version``: the chain head this fold was made from."""
    state: State
    summary: Summary
    """Treat as read-only: ``advance`` copies before applying events."""


class Entry(Protocol):
    """What a fold is made of (a ``service.store.StoredEvent``): one event, when it
    was recorded, its row's hash."""

    @property
    def event(self) -> Event: ...
    @property
    def recorded_at(self) -> datetime: ...
    @property
    def hash(self) -> bytes: ...


INCONSISTENT = (
    "This match's log no longer folds into a match (it was changed outside the service):"
    " an admin audit names the fault (GET /api/admin/matches/{id}/audit)."
)


def fold_from_start(entries: Sequence[Entry], seed: str | None) -> Folded:
    """The match folded from its first event (``LogInconsistent``: the log is not a
    match's, as only a log changed behind the store can be)."""
    created = entries[0].event
    if not isinstance(created, MatchCreated):
        raise LogInconsistent(INCONSISTENT)
    events = [e.event for e in entries]
    try:
        state = fold(events, seed, times=[e.recorded_at for e in entries])
        summary = summarise(events)
    except MatchaError:
        raise
    except Exception as exc:  # evolve trusts the log; a forged one breaks it anywhere
        raise LogInconsistent(INCONSISTENT) from exc
    return Folded(
        created=created,
        version=len(entries),
        head=entries[-1].hash,
        state=state,
        summary=summary,
    )


def advance(folded: Folded, entries: Sequence[Entry]) -> Folded:
    """The fold after ``entries``, the ones right after ``folded.version``."""
    if not entries:
        return folded
    state = folded.state
    try:
        for entry in entries:
            state = evolve(state, entry.event, entry.recorded_at)
    except Exception as exc:  # as in fold_from_start
        raise LogInconsistent(INCONSISTENT) from exc
    return Folded(
        created=folded.created,
        version=folded.version + len(entries),
        head=entries[-1].hash,
        state=state,
        summary=tallied(folded.summary, [e.event for e in entries]),
    )


def tallied(summary: Summary, events: Sequence[Event]) -> Summary:
    """A copy of ``summary`` with ``events`` (the next ones) counted in."""
    after = msgspec.structs.replace(
        summary, tokens=(dict(summary.tokens[0]), dict(summary.tokens[1]))
    )
    for event in events:
        tally(after, event)
    after.last_version = summary.last_version + len(events)
    return after


def _newer(new: Folded, held: Folded) -> bool:
    return new.version > held.version or (new.version == held.version and new.head != held.head)


class FoldCache:
    """The latest fold this process knows of each match (bounded)."""

    def __init__(self, size: int = FOLD_CACHE_SIZE) -> None:
        self._entries: Bounded[str, Folded] = Bounded(size)

    def get(self, match_id: str) -> Folded | None:
        return self._entries.get(match_id)

    def put(self, folded: Folded) -> None:
        """Remember ``folded`` unless a later version is already known."""
        self._entries.put_if(folded.created.match_id, folded, _newer)

    def forget(self, match_id: str) -> None:
        self._entries.pop(match_id)
