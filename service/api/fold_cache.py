"""A per-process cache of folded matches, keyed by match and version.

Why: a command or a view used to read and decode every event of its match
and fold them all; with this cache it reads only the events after the
version it already folded (usually none or one command's worth), which cut
the API's CPU per command (bench/bench_api.py, docs/api.md "Performance").

Why it is always right: events are append-only, so the fold of a match at
version ``v`` never changes; an entry is the fold at its recorded version,
and a reader brings it forward with the events after ``v`` read from the
store, so several API processes may each cache the same match.
tests/api/test_fold_cache.py checks an entry equals the fold of the whole
log after every command, with two processes taking turns.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import msgspec

from schemas.events import Event, MatchCreated
from service.api.summaries import Summary, apply, summarise
from service.engine import State, evolve, fold

FOLD_CACHE_SIZE = 10_000


class Folded(msgspec.Struct, frozen=True, kw_only=True):
    """A match folded up to ``version``: its state, its summary, how it began."""

    created: MatchCreated
    version: int
    state: State
    summary: Summary
    """Treat as read-only: ``advance`` copies before applying events."""


def fold_from_start(events: Sequence[Event], seed: str | None) -> Folded:
    created = events[0]
    if not isinstance(created, MatchCreated):
        raise ValueError("a match log starts with match_created")
    return Folded(
        created=created,
        version=len(events),
        state=fold(events, seed),
        summary=summarise(events),
    )


def advance(folded: Folded, events: Sequence[Event]) -> Folded:
    """The fold after ``events``, the ones right after ``folded.version``."""
    if not events:
        return folded
    state = folded.state
    summary = msgspec.structs.replace(
        folded.summary, tokens=(dict(folded.summary.tokens[0]), dict(folded.summary.tokens[1]))
    )
    for event in events:
        state = evolve(state, event)
        apply(summary, event)
    summary.last_version = folded.version + len(events)
    return Folded(
        created=folded.created, version=summary.last_version, state=state, summary=summary
    )


class FoldCache:
    def __init__(self, size: int = FOLD_CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, Folded] = OrderedDict()

    def get(self, match_id: str) -> Folded | None:
        found = self._entries.get(match_id)
        if found is not None:
            self._entries.move_to_end(match_id)
        return found

    def put(self, folded: Folded) -> None:
        """Remember ``folded`` unless a later version is already known."""
        match_id = folded.created.match_id
        known = self._entries.get(match_id)
        if known is not None and known.version >= folded.version:
            return
        self._entries[match_id] = folded
        self._entries.move_to_end(match_id)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
