"""The archives projection: every finished match's replay archive, kept current.

A pass reads the events that end a match or come after its end (a dispute, a
decision, an annulment: ``log.AFTER_PLAY_TYPES``) after the runner's
position, builds the archive of each match they belong to from its whole log
(``service.replays``: the one loader, the one build, the one upsert) and
stores the archives and the new position in one transaction. Building an
archive twice gives the same bytes, so a pass that is repeated (a worker
killed before its commit) changes nothing.

The sweep (start and every few minutes) builds finished matches that still
have no archive: a log the build tripped on (logged, skipped, tried again
here), or a match that ended before this projection existed.
"""

from __future__ import annotations

from typing import Any

import psycopg

from service.replays import build_batch, load_logs, store_archives
from service.store import matchlog
from service.store.ops import run
from workers.projections.log import AFTER_PLAY_TYPES
from workers.projections.runner import Step

MATCHES_PER_PASS = 50
"""Matches built in one transaction: their archives become visible together, so a
small batch shows the first ones sooner (200 ends at once: 4 passes)."""

SWEEP_LIMIT = 10_000
"""Missing archives one sweep builds at most (newest first); the next sweep goes on."""

_MISSING = f"""
SELECT f.match_id FROM {matchlog.FINISHED} f
WHERE NOT EXISTS (SELECT 1 FROM replay_archives r WHERE r.match_id = f.match_id)
ORDER BY f.position DESC
LIMIT %s
"""


class ArchivesProjection:
    name = "archives"

    def step(self, conn: psycopg.Connection[Any], after: int, high: int) -> Step:
        found = run(conn, matchlog.moved_between(after, high, AFTER_PLAY_TYPES, MATCHES_PER_PASS))
        reached = high if len(found) < MATCHES_PER_PASS else found[-1][0]
        match_ids = list(dict.fromkeys(match_id for _, match_id in found))
        if not match_ids:
            return Step(reached, 0)
        built = build_batch(load_logs(conn, match_ids))
        store_archives(conn, built)
        return Step(reached, len(built))

    def sweep(self, conn: psycopg.Connection[Any]) -> int:
        missing = [str(m) for (m,) in conn.execute(_MISSING, (SWEEP_LIMIT,)).fetchall()]
        built = 0
        for start in range(0, len(missing), MATCHES_PER_PASS):
            done = build_batch(load_logs(conn, missing[start : start + MATCHES_PER_PASS]))
            store_archives(conn, done)
            built += len(done)
        return built
