"""The fair-play projection's runner: the flags and refunds of every ladder
whose results moved, recomputed from the log (``service.fairplay.ladder``).

A pass reads the results and annulments after the runner's position (as the
ratings runner does), and recomputes each ladder they name once, plus every
ladder whose organiser changed its thresholds; the rows and the position are
written in the pass's transaction. The sweep rebuilds every ladder of the log
(``rebuild``): what a fresh recompute gives, whatever happened before.
"""

from __future__ import annotations

from typing import Any

import psycopg

from service.fairplay import ladder
from service.store import matchlog
from service.store.ops import run
from workers.projections.runner import Step

RESULTS_PER_PASS = 1_000


class FlagsProjection:
    name = "flags"

    def step(self, conn: psycopg.Connection[Any], after: int, high: int) -> Step:
        found = run(conn, matchlog.ladders_moved(after, high, RESULTS_PER_PASS))
        reached = high if len(found) < RESULTS_PER_PASS else found[-1].position
        moved = [m.ladder_id for m in found if m.ladder_id is not None]
        ladders = list(dict.fromkeys([*moved, *run(conn, ladder.dirty_ladders())]))
        for ladder_id in ladders:
            run(conn, ladder.write(run(conn, ladder.compute(ladder_id))))
        return Step(reached, len(ladders))

    def sweep(self, conn: psycopg.Connection[Any]) -> int:
        return rebuild(conn)


def rebuild(conn: psycopg.Connection[Any]) -> int:
    """Every ladder's flags and refunds recomputed from the log, one transaction each."""
    ladders = run(conn, matchlog.ladders_of_the_log())
    for ladder_id in ladders:
        with conn.transaction():
            run(conn, ladder.write(run(conn, ladder.compute(ladder_id))))
    return len(ladders)
