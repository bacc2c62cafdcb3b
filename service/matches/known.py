"""What this process knows of each match, always checked against the log: its
seed, its facts and its latest fold (the three caches of the match core).

A match's seed and facts never change once stored, so remembering them is safe
(bounded; an entry evicted is simply read again). The fold is kept by version
and chain head (``service.matches.folds``): a reader brings it forward with the
rows after its version, and folds afresh when the row at that version no
longer carries the hash it was folded from. tests/matches/test_caches_equal_the_fold.py
holds every cache to the fold of the whole log.
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas.events import MatchCreated
from service.cache import Bounded
from service.errors import LogInconsistent, NotFound
from service.matches.facts import LadderTerms, MatchFacts, facts_of
from service.matches.folds import FoldCache, Folded, advance, fold_from_start
from service.store import EventStore, StoredEvent

SEED_CACHE_SIZE = 10_000
FACTS_CACHE_SIZE = 10_000


class Known:
    """The reads of the match core (``MatchCore`` is one): every answer is the log's."""

    def __init__(self, store: EventStore, *, ladder_terms: LadderTerms | None = None) -> None:
        self.store = store
        self._ladder_terms = ladder_terms
        self._seeds: Bounded[str, str] = Bounded(SEED_CACHE_SIZE)
        self._facts: Bounded[str, MatchFacts] = Bounded(FACTS_CACHE_SIZE)
        self._folds = FoldCache()

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

    def learn(self, match_id: str, rows: Sequence[StoredEvent]) -> None:
        """Rows of the match a reader just read from the store (committed, in version
        order) bring the cached fold forward when they continue it: the row after its
        version links to its head (``prev_hash``). No read of its own: on the process
        that did not take a command, the live catch-up reads its rows for a seat's
        frames, and the seat's view (and next command) then find the fold at that
        version instead of reading the same rows again (``service.live.routes``:
        ~9 % of a worker's samples under ``python -m bench api``, socket path).
        Rows that do not continue it are ignored (``current`` checks the log)."""
        cached = self._folds.get(match_id)
        if cached is None or not rows:
            return
        start = cached.version + 1 - rows[0].version
        if start < 0 or start >= len(rows):
            return
        following = rows[start:]
        if following[0].version != cached.version + 1 or following[0].prev_hash != cached.head:
            return
        try:
            folded = advance(cached, following)
        except LogInconsistent:  # a log changed behind the store: ``current`` says so
            self._folds.forget(match_id)
            return
        self._folds.put(folded)

    def remember(self, folded: Folded, seed: str | None = None) -> None:
        """A fold (and, for a match just started, its seed) this process just made."""
        if seed is not None:
            self._seeds.put(folded.created.match_id, seed)
        self._folds.put(folded)
