"""The match summaries' catch-up: any summary behind its match's events is redone.

Summaries are written with the events they follow, in the append's own
transaction (``service.matches``); what can leave one behind is a summary
written apart from its events (by an older release, or a restore of the
events table without its summaries). A pass looks at the matches that had events in a stretch
of the log after the runner's position, redoes the summary of each whose
``last_version`` is behind (``service.matches.summaries.summarise``, from the
whole log; the upsert never moves a summary backwards) and records the
position in the same transaction.

The sweep runs once, at start: every summary missing or behind its events,
for a log older than this runner (the API used to do this scan at each start).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from service.matches.summaries import summarise, upsert_statement
from service.store import matchlog
from service.store.ops import run
from workers.projections.runner import Step

SPAN = 20_000
"""Log positions one pass looks at (a bound on its transaction, not on the log)."""

_BEHIND_ANYWHERE = f"""
SELECT h.match_id
FROM {matchlog.HEADS} h
LEFT JOIN match_summaries s ON s.match_id = h.match_id
WHERE s.last_version IS NULL OR s.last_version < h.version
"""


class SummariesProjection:
    name = "summaries"

    def step(self, conn: psycopg.Connection[Any], after: int, high: int) -> Step:
        upper = min(high, after + SPAN)
        moved = run(conn, matchlog.versions_between(after, upper))
        known = dict(
            conn.execute(
                "SELECT match_id, last_version FROM match_summaries WHERE match_id = ANY(%s)",
                (list(moved),),
            ).fetchall()
        )
        behind = [m for m, version in moved.items() if known.get(m, 0) < version]
        return Step(upper, _redo(conn, behind))

    def sweep(self, conn: psycopg.Connection[Any]) -> int:
        behind = [str(m) for (m,) in conn.execute(_BEHIND_ANYWHERE).fetchall()]
        return _redo(conn, behind)


def _redo(conn: psycopg.Connection[Any], match_ids: Sequence[str]) -> int:
    for match_id in match_ids:
        rows = run(conn, matchlog.rows_of_match(match_id))
        sql, params = upsert_statement(summarise(r.event for r in rows))
        conn.execute(sql, params)
    return len(match_ids)
