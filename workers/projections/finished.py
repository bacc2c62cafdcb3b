"""What the projections of finished matches share (the archives, the replay's odds).

Each follows the events that end a match or come after its end
(``log.AFTER_PLAY_TYPES``), loads the whole logs of the matches they name through
the archives' one loader (``service.replays.load_logs``) and rebuilds what it keeps
of each match from its whole log, in the pass's transaction. Its sweep rebuilds the
finished matches that have nothing kept yet (newest first, a bounded number a
sweep), a chunk at a time in a transaction of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from service.replays import LogRow, load_logs
from service.store import matchlog
from service.store.ops import run
from workers.projections.log import AFTER_PLAY_TYPES
from workers.projections.runner import Step


class FinishedMatches:
    """A projection of finished matches: ``apply`` (rebuild and store the rows of
    these logs, return how many matches it stored) and ``kept_table`` (the table
    whose ``match_id`` says a match has its rows) are each one's own."""

    name: str
    kept_table: str
    matches_per_pass: int
    sweep_limit: int

    def apply(self, conn: psycopg.Connection[Any], logs: Sequence[LogRow]) -> int:
        raise NotImplementedError

    def step(self, conn: psycopg.Connection[Any], after: int, high: int) -> Step:
        found = run(
            conn, matchlog.moved_between(after, high, AFTER_PLAY_TYPES, self.matches_per_pass)
        )
        reached = high if len(found) < self.matches_per_pass else found[-1][0]
        match_ids = list(dict.fromkeys(match_id for _, match_id in found))
        if not match_ids:
            return Step(reached, 0)
        return Step(reached, self.apply(conn, load_logs(conn, match_ids)))

    def sweep(self, conn: psycopg.Connection[Any]) -> int:
        missing = [
            str(m)
            for (m,) in conn.execute(
                f"SELECT f.match_id FROM {matchlog.FINISHED} f"
                f" WHERE NOT EXISTS (SELECT 1 FROM {self.kept_table} k"
                "  WHERE k.match_id = f.match_id)"
                " ORDER BY f.position DESC LIMIT %s",
                (self.sweep_limit,),
            ).fetchall()
        ]
        done = 0
        for start in range(0, len(missing), self.matches_per_pass):
            with conn.transaction():
                chunk = missing[start : start + self.matches_per_pass]
                done += self.apply(conn, load_logs(conn, chunk))
        return done


__all__ = ["FinishedMatches"]
