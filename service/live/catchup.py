"""The hub's reads of the store (the truth) for its local viewers.

* From this process's own latest appends when they cover everything a viewer
  asks for up to the highest version the hub knows of (a seat following its
  own match on the process that took the command: no read);
* else from the store, where identical reads in flight share one query (1,000
  viewers catching up from the same version at once cost one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from service.broker.publish import StoredLike
from service.live import metrics
from service.live.watches import Watches

LoadPage = Callable[[str, int, int], Awaitable[Sequence[StoredLike]]]
"""``(match_id, after, limit)`` → stored events with version > after, in order."""

PAGE = 500

RECENT_ROWS = 32
"""How many of a watched match's latest rows appended here the hub keeps."""


class CatchUp:
    def __init__(self, watches: Watches, load_page: LoadPage) -> None:
        self._watches = watches.matches
        self._load_page = load_page
        self._inflight: dict[tuple[str, int], asyncio.Task[tuple[StoredLike, ...]]] = {}

    def remember(self, match_id: str, rows: Sequence[StoredLike]) -> None:
        """Rows this process just committed (after commit, in version order): kept
        for the match's local viewers if anyone here watches it."""
        watch = self._watches.get(match_id)
        if watch is None or not rows:
            return
        kept = watch.recent
        if kept and kept[-1].version + 1 == rows[0].version:
            watch.recent = (*kept, *rows)[-RECENT_ROWS:]
        else:
            watch.recent = tuple(rows)[-RECENT_ROWS:]

    async def load_after(self, match_id: str, after: int) -> tuple[StoredLike, ...]:
        """Every committed event of the match after ``after`` (whole: the stream redacts).

        From this process's own latest appends when they cover everything after
        ``after`` up to the highest version the hub knows of (a seat following
        its own match on the process that took the command: no read); else from
        the store, where identical reads in flight share one query (a crowd
        catching up at once). The periodic check always reads the store.
        """
        watch = self._watches.get(match_id)
        if watch is not None and watch.recent and watch.known is not None:
            recent = watch.recent
            if recent[0].version <= after + 1 and after < recent[-1].version >= watch.known:
                metrics.recent_hits.inc()
                return tuple(r for r in recent if r.version > after)
        key = (match_id, after)
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(self._load_all(match_id, after))
            self._inflight[key] = task
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        return await asyncio.shield(task)

    async def _load_all(self, match_id: str, after: int) -> tuple[StoredLike, ...]:
        out: list[StoredLike] = []
        cursor = after
        while True:
            page = await self._load_page(match_id, cursor, PAGE)
            out.extend(page)
            if len(page) < PAGE:
                break
            cursor = page[-1].version
        watch = self._watches.get(match_id)
        if out and watch is not None and watch.known is None:
            # Only a start: a private read (one viewer's catch-up) must not advance what
            # the hub thinks every local viewer was given, or the check would skip it.
            watch.known = out[-1].version
        return tuple(out)
