"""The ratings projection's runner: which ladders have new results, one update each.

A pass reads the results and annulments (``log.END_TYPES``) after the
runner's position, finds their ladders, and brings each ladder up to date
once with the ratings job's public function, ``workers.ratings.update_ladder``
(whatever number of its matches ended: ratings work is coalesced per ladder,
never one job per match). That job records the ladder's own position in its
own transaction and is safe to run again, so this runner's position is only
where the next scan starts: a pass repeated after a crash finds each ladder
already up to date.

Ratings run in their own runner thread, beside the archives' one: a long
recompute never holds up an archive, and a backlog of archives never holds up
a leaderboard.

The sweep (start and every few minutes) updates every ladder whose recorded
position is behind its last result: a ladder whose update failed, or results
from before this runner existed.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from service.store import matchlog
from service.store.ops import run
from workers import ratings  # the ratings job: ratings.update_ladder, its public function
from workers.projections.runner import Step

log = logging.getLogger("matcha.workers.projections")

RESULTS_PER_PASS = 1_000
"""Results read in one pass (the ladders they name are updated once each)."""


class RatingsProjection:
    name = "ratings"

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url

    def step(self, conn: psycopg.Connection[Any], after: int, high: int) -> Step:
        found = run(conn, matchlog.ladders_moved(after, high, RESULTS_PER_PASS))
        reached = high if len(found) < RESULTS_PER_PASS else found[-1].position
        ladders = list(dict.fromkeys(m.ladder_id for m in found if m.ladder_id is not None))
        return Step(reached, self._update(ladders))

    def sweep(self, conn: psycopg.Connection[Any]) -> int:
        applied: dict[str, int] = {
            str(ladder): int(position)
            for ladder, position in conn.execute(
                "SELECT ladder_id, position FROM ladder_projections"
            ).fetchall()
        }
        last_ends = run(conn, matchlog.last_end_of_ladders())
        behind = [ladder for ladder, last in last_ends.items() if applied.get(ladder, 0) < last]
        return self._update(behind)

    def _update(self, ladders: list[str]) -> int:
        updated = 0
        for ladder_id in ladders:
            try:
                ratings.update_ladder(ladder_id, database_url=self.database_url)
            except psycopg.OperationalError:
                raise  # the database is away: the whole pass is tried again
            except Exception:  # one ladder the job trips on must not hold up the others
                log.exception(
                    "ratings of ladder %s could not be updated; the sweep retries", ladder_id
                )
                continue
            updated += 1
        return updated
