"""One season command, end to end: lock the ladder's seasons, fold, decide, append.

The API (an organiser schedules or ends a season) and the workers (the
calendar starts and ends seasons, the ratings freeze a season's standings)
make the same one call, ``execute``, inside a transaction of their own, on an
async or a blocking connection (``service.store.ops``):

1. lock the ladder's seasons (a transaction-scoped advisory lock): commands of
   one ladder, whoever gives them, are decided one at a time, each on the
   state the previous one committed;
2. fold the ladder's season stream (a few rows: no cache);
3. ``engine.decide`` (pure; raises a ``MatchaError`` that says why);
4. append the events at the version folded (``VersionConflict`` if the stream
   moved meanwhile, which the lock makes a never-seen case).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from schemas.seasons import SeasonCommand
from service.seasons import engine
from service.seasons.stream import LADDER_EVENTS, StoredLadderEvent
from service.store.ops import Op, Query
from service.store.stream import EMPTY, Head

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('matcha.seasons.' || %s, 0))"


class Folded(msgspec.Struct, frozen=True, kw_only=True):
    """A ladder's seasons as committed: the stream's rows, their fold, its head."""

    ladder_id: str
    rows: tuple[StoredLadderEvent, ...]
    state: engine.Seasons
    head: Head

    @property
    def version(self) -> int:
        return self.head.version


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What a command did: the seasons after it and the rows it appended."""

    ladder_id: str
    state: engine.Seasons
    stored: tuple[StoredLadderEvent, ...]


def _folded(ladder_id: str, rows: Sequence[StoredLadderEvent]) -> Folded:
    head = EMPTY if not rows else Head(rows[-1].version, rows[-1].hash)
    state = engine.fold(r.event for r in rows)
    return Folded(ladder_id=ladder_id, rows=tuple(rows), state=state, head=head)


def current(ladder_id: str) -> Op[Folded]:
    """The ladder's seasons as committed now (no lock: for reads)."""
    return _folded(ladder_id, (yield from LADDER_EVENTS.load(ladder_id)))


def execute(ladder_id: str, command: SeasonCommand, *, actor: str) -> Op[Outcome]:
    """Decide ``command`` on the ladder's seasons and append what it caused (see the
    module docstring). Run it inside a transaction: the lock lasts until it ends."""
    yield Query(_LOCK, (ladder_id,))
    folded = yield from current(ladder_id)
    events = engine.decide(folded.state, command)
    stored = yield from LADDER_EVENTS.append(
        ladder_id, folded.version, events, actor=actor, prev_hash=folded.head.hash
    )
    return Outcome(
        ladder_id=ladder_id, state=engine.fold(events, folded.state), stored=tuple(stored)
    )
