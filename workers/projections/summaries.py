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

from schemas.events import decode_event
from service.matches.summaries import summarise, upsert_statement
from workers.projections.runner import Step

SPAN = 20_000
"""Log positions one pass looks at (a bound on its transaction, not on the log)."""

_BEHIND_IN_SPAN = """
SELECT e.match_id
FROM (SELECT match_id, max(version) AS version FROM events
      WHERE position > %s AND position <= %s GROUP BY match_id) e
LEFT JOIN match_summaries s ON s.match_id = e.match_id
WHERE s.last_version IS NULL OR s.last_version < e.version
"""

_BEHIND_ANYWHERE = """
SELECT e.match_id
FROM (SELECT match_id, max(version) AS version FROM events GROUP BY match_id) e
LEFT JOIN match_summaries s ON s.match_id = e.match_id
WHERE s.last_version IS NULL OR s.last_version < e.version
"""


class SummariesProjection:
    name = "summaries"

    def step(self, conn: psycopg.Connection[Any], after: int, high: int) -> Step:
        upper = min(high, after + SPAN)
        behind = [str(m) for (m,) in conn.execute(_BEHIND_IN_SPAN, (after, upper)).fetchall()]
        return Step(upper, _redo(conn, behind))

    def sweep(self, conn: psycopg.Connection[Any]) -> int:
        behind = [str(m) for (m,) in conn.execute(_BEHIND_ANYWHERE).fetchall()]
        return _redo(conn, behind)


def _redo(conn: psycopg.Connection[Any], match_ids: Sequence[str]) -> int:
    for match_id in match_ids:
        rows = conn.execute(
            "SELECT data::text FROM events WHERE match_id = %s ORDER BY version", (match_id,)
        ).fetchall()
        sql, params = upsert_statement(summarise(decode_event(r[0]) for r in rows))
        conn.execute(sql, params)
    return len(match_ids)
