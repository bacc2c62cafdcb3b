"""The ``match_deadlines`` projection: when a timed match's next clock runs out.

Kept in the same transaction as every append of a timed match (as an
``also`` statement of ``EventStore.append``), so the row always says what the
log says: the seat whose running clock runs out first, when, and the version
the match was at. Read by the sweepers (``workers.clocks``), which time the
seat out at that version. The deadline comes from ``service.engine.clock``,
the one clock function.
"""

from __future__ import annotations

from service.engine import State
from service.engine import clock as clk

_UPSERT = """
INSERT INTO match_deadlines AS d (match_id, seat, due_at, version)
VALUES (%s, %s, %s, %s)
ON CONFLICT (match_id) DO UPDATE
   SET seat = EXCLUDED.seat, due_at = EXCLUDED.due_at, version = EXCLUDED.version,
       lease_until = '-infinity'
 WHERE d.version < EXCLUDED.version
"""

_DELETE = "DELETE FROM match_deadlines WHERE match_id = %s AND version < %s"


def deadline_statement(
    match_id: str, state: State, version: int
) -> tuple[str, tuple[object, ...]] | None:
    """``(sql, params)`` for ``EventStore.append(also=...)``: the match's next deadline
    after ``version`` (``state``), or the row's removal; None for an untimed match."""
    if state.clock is None:
        return None
    due = clk.next_deadline(state)
    if due is None or state.ended or state.annulled:
        return _DELETE, (match_id, version)
    return _UPSERT, (match_id, due[0], due[1], version)
