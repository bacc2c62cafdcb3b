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

from collections.abc import Sequence
from typing import Any

import psycopg

from service.replays import LogRow, build_batch, store_archives
from workers.projections.finished import FinishedMatches

MATCHES_PER_PASS = 50
"""Matches built in one transaction: their archives become visible together, so a
small batch shows the first ones sooner (200 ends at once: 4 passes)."""

SWEEP_LIMIT = 10_000
"""Missing archives one sweep builds at most (newest first); the next sweep goes on."""


class ArchivesProjection(FinishedMatches):
    name = "archives"
    kept_table = "replay_archives"
    matches_per_pass = MATCHES_PER_PASS
    sweep_limit = SWEEP_LIMIT

    def apply(self, conn: psycopg.Connection[Any], logs: Sequence[LogRow]) -> int:
        built = build_batch(logs)
        store_archives(conn, built)
        return len(built)
