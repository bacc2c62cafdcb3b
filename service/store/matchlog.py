"""The one reader of the match log (``events``) for projections, the CLI and the API.

Every read of the ``events`` table outside the store goes through here (or
``service.store.packed``, the ratings recompute's bulk reads), so the table's
columns, its JSON paths (``data ->> 'ladder_id'``) and the indexes the reads
lean on are known in one place; tests/store/test_one_reader_of_the_log.py fails
on a new raw read elsewhere. Each read is an ``Op`` (``service.store.ops``): a
worker runs it with ``run(conn, op)``, the API with ``await run_async(conn, op)``.

Two kinds of reads:

* typed reads (functions): the rows of a match, rows after a position, the
  matches of a ladder or a player, the last position, ...;
* *relations* (``HEADS``, ``FINISHED``, ``RESULTS``, ``last_row_of``): a parenthesised SELECT
  over the log with named columns, for the few statements that must join the
  log with a projection's own table in one round trip (``FROM {HEADS} h LEFT
  JOIN match_summaries s ...``). PostgreSQL plans them as if written inline.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple

from schemas.events import Event
from service.store.events import MATCH_EVENTS, StoredEvent
from service.store.ops import Op, Query
from service.store.packed import PERIOD

# -- relations ----------------------------------------------------------------------------

HEADS: Final = "(SELECT match_id, max(version) AS version FROM events GROUP BY match_id)"
"""Relation: one row per match, ``match_id`` and its last ``version``."""

FINISHED: Final = (
    "(SELECT match_id, max(position) AS position FROM events"
    " WHERE type IN ('match_ended', 'match_annulled') GROUP BY match_id)"
)
"""Relation: one row per finished (ended or annulled) match: ``match_id`` and the
``position`` of its last ending event."""

RESULTS: Final = (
    "(SELECT position, match_id, data ->> 'winner' AS winner, data ->> 'reason' AS reason"
    " FROM events WHERE type = 'match_ended')"
)
"""Relation: each match's result (its ``match_ended`` event): ``position``,
``match_id``, ``winner`` (the seat as text, NULL for a draw), ``reason``."""


def last_row_of(match_id: str) -> str:
    """Relation: the last row of one match (``version``, ``hash``), the match id
    given as SQL (a placeholder such as ``%(match_id)s``); no row: no match."""
    return (
        f"(SELECT version, hash FROM events WHERE match_id = {match_id}"
        " ORDER BY version DESC LIMIT 1)"
    )


END_TYPES: Final = ("match_ended", "match_annulled")
"""Events that finish a match or undo its result: what changes a ladder's ratings."""


# -- positions ----------------------------------------------------------------------------


def last_position() -> Op[int]:
    """The last position handed out in the match log, committed or not (no barrier:
    cheap). A season boundary's ``at_position``; a projection's lag."""
    return (yield from MATCH_EVENTS.last_position())


def committed_high(*, try_for: float = 0.0, wait_at_most: float | None = None) -> Op[int]:
    """A position ``H`` such that every event at or below it has committed or never
    will (the match log's barrier, ``Stream.committed_high``: see its ``try_for``
    and ``wait_at_most``). Rows at or below it, read by later statements, are final."""
    return (yield from MATCH_EVENTS.committed_high(try_for=try_for, wait_at_most=wait_at_most))


def read_after(
    position: int, *, limit: int = 1000, types: Sequence[str] | None = None
) -> Op[list[StoredEvent]]:
    """Committed events of every match after ``position``, in position order (with
    the barrier: a reader that passes the last position it saw misses nothing)."""
    return (yield from MATCH_EVENTS.read_after(position, limit=limit, types=types))


class Moved(NamedTuple):
    position: int
    match_id: str


def moved_between(after: int, high: int, types: Sequence[str], limit: int) -> Op[list[Moved]]:
    """(position, match id) of the events of ``types`` in ``(after, high]``, in
    position order, at most ``limit``. ``high`` must come from ``committed_high``."""
    rows = yield Query(
        "SELECT position, match_id FROM events"
        " WHERE type = ANY(%s) AND position > %s AND position <= %s"
        " ORDER BY position LIMIT %s",
        (list(types), after, high, limit),
    )
    return [Moved(int(p), str(m)) for p, m in rows]


# -- matches ------------------------------------------------------------------------------


def rows_of_match(match_id: str) -> Op[list[StoredEvent]]:
    """The match's events in version order ([] if no such match)."""
    return (yield from MATCH_EVENTS.load(match_id))


def every_log() -> Op[dict[str, list[Event]]]:
    """Every match's events, by match id (in version order): a rebuild from scratch."""
    rows = yield Query(f"SELECT {MATCH_EVENTS.columns} FROM events ORDER BY match_id, version")
    logs: dict[str, list[Event]] = {}
    for r in rows:
        stored = MATCH_EVENTS.read_row(r)
        logs.setdefault(stored.match_id, []).append(stored.event)
    return logs


def versions_between(after: int, upto: int) -> Op[dict[str, int]]:
    """The matches with events in ``(after, upto]``, each with its last version there."""
    rows = yield Query(
        "SELECT match_id, max(version) FROM events WHERE position > %s AND position <= %s"
        " GROUP BY match_id",
        (after, upto),
    )
    return {str(m): int(v) for m, v in rows}


def started(match_ids: Sequence[str]) -> Op[set[str]]:
    """Which of these matches exist (have their first event)."""
    rows = yield Query(
        "SELECT match_id FROM events WHERE match_id = ANY(%s) AND version = 1",
        (list(match_ids),),
    )
    return {str(m) for (m,) in rows}


class LogRow(NamedTuple):
    """A row as stored, ``data`` as its text (nothing decoded or normalised)."""

    position: int
    match_id: str
    version: int
    type: str
    data: str
    actor: str
    recorded_at: datetime
    prev_hash: bytes
    hash: bytes
    key_id: str | None
    signature: bytes | None


def _log_row(r: Sequence[Any]) -> LogRow:
    return LogRow(
        int(r[0]),
        str(r[1]),
        int(r[2]),
        str(r[3]),
        str(r[4]),
        str(r[5]),
        r[6],
        bytes(r[7]),
        bytes(r[8]),
        r[9],
        None if r[10] is None else bytes(r[10]),
    )


def rows_of_types(types: Sequence[str]) -> Op[list[LogRow]]:
    """Every row of these types, of every match, in position order, as stored
    (found through the (type, position) index)."""
    rows = yield Query(
        f"SELECT {MATCH_EVENTS.columns} FROM events WHERE type = ANY(%s) ORDER BY position",
        (list(types),),
    )
    return [_log_row(r) for r in rows]


def log_of_match(match_id: str) -> Op[list[LogRow]]:
    """Every row of one match as stored, in version order (a duplicated version
    twice, by position): what an audit checks, nothing decoded or normalised."""
    rows = yield Query(
        f"SELECT {MATCH_EVENTS.columns} FROM events WHERE match_id = %s ORDER BY version, position",
        (match_id,),
    )
    return [_log_row(r) for r in rows]


def every_match() -> Op[list[str]]:
    """Every match of the log, oldest first."""
    rows = yield Query("SELECT match_id FROM events WHERE type = 'match_created' ORDER BY position")
    return [str(m) for (m,) in rows]


def ladders_of(match_ids: Sequence[str]) -> Op[dict[str, str | None]]:
    """Each of these matches' ladder (None: a match on no ladder); unknown ids are absent."""
    rows = yield Query(
        "SELECT match_id, data ->> 'ladder_id' FROM events"
        " WHERE type = 'match_created' AND match_id = ANY(%s)",
        (list(match_ids),),
    )
    return {str(m): None if ladder is None else str(ladder) for m, ladder in rows}


def seed_used_elsewhere(seed: str, match_id: str) -> Op[str | None]:
    """Another match dealt from ``seed`` (kept in ``match_seeds``) or that revealed
    it at its end, if any."""
    rows = yield Query(
        "SELECT match_id FROM match_seeds WHERE seed = %(seed)s AND match_id <> %(match)s"
        " UNION ALL"
        " SELECT match_id FROM events"
        " WHERE type = 'match_ended' AND data ->> 'seed' = %(seed)s AND match_id <> %(match)s"
        " LIMIT 1",
        {"seed": seed, "match": match_id},
    )
    return None if not rows else str(rows[0][0])


class SignedRow(NamedTuple):
    """A signed row's head, with the match's seed (None when no seed is kept)."""

    match_id: str
    version: int
    hash: bytes
    recorded_at: datetime
    key_id: str
    signature: bytes
    seed: str | None


def last_signed_row(match_id: str, *, before: int | None = None) -> Op[SignedRow | None]:
    """The match's last signed row (below version ``before``, if given)."""
    rows = yield Query(
        "SELECT e.match_id, e.version, e.hash, e.recorded_at, e.key_id, e.signature, s.seed"
        " FROM events e LEFT JOIN match_seeds s ON s.match_id = e.match_id"
        " WHERE e.match_id = %s AND e.signature IS NOT NULL AND e.version < %s"
        " ORDER BY e.version DESC LIMIT 1",
        (match_id, before if before is not None else 2**31 - 1),
    )
    if not rows:
        return None
    m, version, hash_, at, key_id, signature, seed = rows[0]
    return SignedRow(str(m), int(version), bytes(hash_), at, str(key_id), bytes(signature), seed)


class ChainLink(NamedTuple):
    """One row of a match's chain: its ``version`` and chain ``hash``."""

    version: int
    hash: bytes


def chain_of_match(match_id: str) -> Op[list[ChainLink]]:
    """The match's chain (version, hash) in version order ([] if no such match):
    what a receipt is checked against."""
    rows = yield Query(
        "SELECT version, hash FROM events WHERE match_id = %s ORDER BY version", (match_id,)
    )
    return [ChainLink(int(v), bytes(h)) for v, h in rows]


def latest_signed_heads(after: int, high: int) -> Op[list[SignedRow]]:
    """The latest signed row of each match that moved in ``(after, high]``: one
    signature to verify per match, however many commands it took (a checkpoint's
    leaves)."""
    rows = yield Query(
        "SELECT DISTINCT ON (e.match_id)"
        " e.match_id, e.version, e.hash, e.recorded_at, e.key_id, e.signature, s.seed"
        " FROM events e LEFT JOIN match_seeds s ON s.match_id = e.match_id"
        " WHERE e.position > %s AND e.position <= %s AND e.signature IS NOT NULL"
        " ORDER BY e.match_id, e.version DESC",
        (after, high),
    )
    return [
        SignedRow(str(m), int(v), bytes(h), at, str(k), bytes(sig), seed)
        for m, v, h, at, k, sig, seed in rows
    ]


class LegacyHead(NamedTuple):
    """A match's last row at or below a position, from before signatures."""

    match_id: str
    version: int
    hash: bytes
    seed: str | None


def heads_up_to(position: int) -> Op[list[LegacyHead]]:
    """Each match's last row at or below ``position`` (with its seed, if kept): the
    heads of rows written before signatures, trusted as they stand at the first
    checkpoint."""
    rows = yield Query(
        "SELECT DISTINCT ON (e.match_id) e.match_id, e.version, e.hash, s.seed"
        " FROM events e LEFT JOIN match_seeds s ON s.match_id = e.match_id"
        " WHERE e.position <= %s ORDER BY e.match_id, e.version DESC",
        (position,),
    )
    return [LegacyHead(str(m), int(v), bytes(h), seed) for m, v, h, seed in rows]


class ResultCover(NamedTuple):
    """A ladder's match result and the first signed row at or after it, which
    covers it through the chain (None when no signed row does)."""

    match_id: str
    signed: SignedRow | None
    legacy: bool
    """The result was written before signatures (migration 0025's epoch)."""


def signed_covers_of_results(ladder_id: str, after: int, high: int) -> Op[list[ResultCover]]:
    """Each result (``match_ended``) of the ladder in ``(after, high]`` with the
    signed row that covers it: what the ratings' guard checks before counting it."""
    rows = yield Query(
        """
SELECT e.match_id, s.version, s.hash, s.recorded_at, s.key_id, s.signature, m.seed,
       e.position <= (SELECT coalesce(max(unsigned_up_to), 0) FROM evidence_epoch) AS legacy
FROM events e
JOIN events c ON c.match_id = e.match_id AND c.version = 1 AND c.type = 'match_created'
LEFT JOIN LATERAL (
    SELECT x.version, x.hash, x.recorded_at, x.key_id, x.signature FROM events x
    WHERE x.match_id = e.match_id AND x.version >= e.version AND x.signature IS NOT NULL
    ORDER BY x.version LIMIT 1) s ON true
LEFT JOIN match_seeds m ON m.match_id = e.match_id
WHERE e.type = 'match_ended' AND e.position > %(after)s AND e.position <= %(high)s
  AND c.data ->> 'ladder_id' = %(ladder)s
""",
        {"ladder": ladder_id, "high": high, "after": after},
    )
    return [
        ResultCover(
            str(m),
            None
            if sig is None
            else SignedRow(str(m), int(v), bytes(h), at, str(k), bytes(sig), seed),
            bool(legacy),
        )
        for m, v, h, at, k, sig, seed, legacy in rows
    ]


# -- ladders and players ------------------------------------------------------------------
#
# A match's ladder and players are in its match_created event (version 1);
# events_ladder_created_idx (migration 0003) indexes (data ->> 'ladder_id', position)
# of those rows.


def ladder_has_matches(ladder_id: str) -> Op[bool]:
    """Some match of the log was created on this ladder."""
    rows = yield Query(
        "SELECT 1 FROM events WHERE type = 'match_created' AND data ->> 'ladder_id' = %s LIMIT 1",
        (ladder_id,),
    )
    return bool(rows)


def matches_of_ladder(ladder_id: str) -> Op[list[str]]:
    """Every match of the ladder, oldest first."""
    rows = yield Query(
        "SELECT match_id FROM events WHERE type = 'match_created'"
        " AND data ->> 'ladder_id' = %s ORDER BY position",
        (ladder_id,),
    )
    return [str(m) for (m,) in rows]


def matches_of_player(player_id: str) -> Op[list[str]]:
    """Every match the player sat in, oldest first."""
    rows = yield Query(
        "SELECT match_id FROM events WHERE type = 'match_created'"
        " AND data -> 'players' ? %s ORDER BY position",
        (player_id,),
    )
    return [str(m) for (m,) in rows]


def finished_matches_of_ladder(ladder_id: str) -> Op[list[str]]:
    """Every finished (ended or annulled) match of the ladder, oldest first."""
    rows = yield Query(
        "SELECT c.match_id FROM events c"
        " WHERE c.type = 'match_created' AND c.data ->> 'ladder_id' = %s"
        "   AND EXISTS (SELECT 1 FROM events e WHERE e.match_id = c.match_id"
        "               AND e.type IN ('match_ended', 'match_annulled'))"
        " ORDER BY c.position",
        (ladder_id,),
    )
    return [str(m) for (m,) in rows]


class LadderMove(NamedTuple):
    position: int
    ladder_id: str | None
    """None: a match on no ladder."""


def ladders_moved(after: int, high: int, limit: int) -> Op[list[LadderMove]]:
    """The results and annulments (``END_TYPES``) in ``(after, high]`` with the
    ladder of their match, in position order, at most ``limit``."""
    rows = yield Query(
        "SELECT e.position, c.data ->> 'ladder_id' FROM events e"
        " JOIN events c ON c.match_id = e.match_id AND c.version = 1"
        " WHERE e.type = ANY(%s) AND e.position > %s AND e.position <= %s"
        " ORDER BY e.position LIMIT %s",
        (list(END_TYPES), after, high, limit),
    )
    return [LadderMove(int(p), None if ladder is None else str(ladder)) for p, ladder in rows]


def last_end_of_ladders() -> Op[dict[str, int]]:
    """Each ladder's last position of a result or annulment of one of its matches."""
    rows = yield Query(
        "SELECT c.data ->> 'ladder_id', max(e.position) FROM events e"
        " JOIN events c ON c.match_id = e.match_id AND c.version = 1"
        " WHERE e.type IN ('match_ended', 'match_annulled')"
        "   AND c.data ->> 'ladder_id' IS NOT NULL"
        " GROUP BY 1"
    )
    return {str(ladder): int(last) for ladder, last in rows}


def ladder_annulled_between(ladder_id: str, after: int, high: int) -> Op[bool]:
    """Some match of the ladder was annulled in ``(after, high]``."""
    rows = yield Query(
        "SELECT 1 FROM events a"
        " JOIN events c ON c.match_id = a.match_id AND c.version = 1"
        "   AND c.type = 'match_created'"
        " WHERE a.type = 'match_annulled' AND a.position > %s AND a.position <= %s"
        "   AND c.data ->> 'ladder_id' = %s LIMIT 1",
        (after, high, ladder_id),
    )
    return bool(rows)


# -- archives -----------------------------------------------------------------------------

ArchiveLog = tuple[str, str | None, bool, str | None, str | None, bool | None]
"""One match as the archive builder reads it (``logs_for_archives``): (match id,
its events as the record's JSON or None if no such match, finished, its players'
names as a JSON object, its ladder's name, whether the ladder hides hands)."""

_LOGS_FOR_ARCHIVES = """
SELECT m.match_id,
    (SELECT json_agg(json_build_object(
         'version', e.version, 'actor', e.actor,
         'recorded_at', to_char(e.recorded_at AT TIME ZONE 'UTC',
                                'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
         'prev_hash', encode(e.prev_hash, 'hex'), 'hash', encode(e.hash, 'hex'),
         'event', e.data, 'position', e.position) ORDER BY e.version)::text
       FROM events e WHERE e.match_id = m.match_id),
    EXISTS (SELECT 1 FROM events e WHERE e.match_id = m.match_id
                                     AND e.type IN ('match_ended', 'match_annulled')),
    (SELECT json_object_agg(p.id, p.name)::text FROM players p
      WHERE p.id IN (SELECT jsonb_array_elements_text(c.data -> 'players'))),
    l.name, l.hide_hands_in_replay
FROM unnest(%(match_ids)s::text[]) WITH ORDINALITY AS m(match_id, n)
LEFT JOIN events c ON c.match_id = m.match_id AND c.version = 1
LEFT JOIN ladders l ON l.id = c.data ->> 'ladder_id'
ORDER BY m.n
"""
# The events shaped as the record's (``recorded_at`` exactly as
# ``chain.format_recorded_at`` writes it, hashes in hex), one row per id in the
# order given: one round trip for a whole batch, and one msgspec decode per
# match instead of a Python loop over the rows (the archive job's largest cost
# after the views).


def logs_for_archives(match_ids: Sequence[str]) -> Op[list[ArchiveLog]]:
    """What an archive build needs of each match (``ArchiveLog``), in the order given."""
    rows: Any = yield Query(_LOGS_FOR_ARCHIVES, {"match_ids": list(match_ids)})
    found: list[ArchiveLog] = rows
    return found


# -- ratings ------------------------------------------------------------------------------

_NEW_RESULTS = f"""
SELECT e.position, e.match_id, c.data -> 'players' ->> 0, c.data -> 'players' ->> 1,
       e.data ->> 'winner', e.data ->> 'reason' = 'timeout', {
    PERIOD.replace("recorded_at", "e.recorded_at")
}
FROM events e
JOIN events c ON c.match_id = e.match_id AND c.version = 1 AND c.type = 'match_created'
WHERE e.type = 'match_ended' AND e.position > %(after)s AND e.position <= %(high)s
  AND c.data ->> 'ladder_id' = %(ladder)s
  AND e.data ->> 'reason' IS DISTINCT FROM 'aborted'
  AND NOT EXISTS (
      SELECT 1 FROM events a
      WHERE a.match_id = e.match_id AND a.type = 'match_annulled' AND a.position <= %(high)s)
ORDER BY e.position
"""


class NewResult(NamedTuple):
    """A rated result, as the incremental ratings path reads it."""

    position: int
    match_id: str
    player0: str
    player1: str
    winner: str | None
    """The winning seat as text ("0", "1"), None for a draw."""
    on_time: bool | None
    """Ended on time (None: the event names no reason)."""
    period: int
    """Its rating period (``packed.PERIOD``; 0 when ``period_us`` is 1 and unused)."""


def results_between(ladder_id: str, after: int, high: int, period_us: int) -> Op[list[NewResult]]:
    """The ladder's results in ``(after, high]`` to rate, in position order: aborted
    matches and matches annulled up to ``high`` left out."""
    rows = yield Query(
        _NEW_RESULTS, {"ladder": ladder_id, "after": after, "high": high, "period_us": period_us}
    )
    return [NewResult(*r) for r in rows]


# -- fair play ----------------------------------------------------------------------------

TIMED_FROM: Final = ("card_played", "passed", "round_revealed", "cards_kept")
"""A move is timed from the event of these before it in its match: not the deals
(their hands are the big rows; a hand's first move is timed from the keep
before it), so a match's first move is not timed."""


class FairPlayLog(NamedTuple):
    """A ladder's matches as the fair-play signals read them (``fairplay_log``),
    column-wise: numbers as 8-byte arrays, ids as lists, nothing per row in Python."""

    match_ids: list[str]
    """The ladder's matches that ended, in the order they ended; for each:"""
    player0: list[str]
    player1: list[str]
    ended_position: array[int]
    ended_code: array[int]
    """The winning seat (0, 1) or 2 for a draw, + 4 if it ended by a resignation or
    a time-out, + 8 if it was aborted."""
    ended_at: array[float]
    """POSIX seconds."""
    created_at: array[float]
    """POSIX seconds: when each was created."""
    annulled: dict[str, int]
    """Every annulled match (of every ladder), with the position of its annulment."""
    moves: dict[str, tuple[int, int, int, int, int]]
    """Matches with moves: (cards played, seat 0's timed moves, seat 1's, seat 0's
    fast ones, seat 1's), each move timed as ``TIMED_FROM`` says."""


_ENDED_OF_LADDER = """
SELECT coalesce(string_agg(match_id || E'\t' || p0 || E'\t' || p1, E'\t'), ''),
       coalesce(string_agg(int8send(position), ''::bytea), ''::bytea),
       coalesce(string_agg(int8send(code), ''::bytea), ''::bytea),
       coalesce(string_agg(float8send(at), ''::bytea), ''::bytea),
       coalesce(string_agg(float8send(created), ''::bytea), ''::bytea)
FROM (SELECT c.match_id, c.data -> 'players' ->> 0 AS p0, c.data -> 'players' ->> 1 AS p1,
             e.position, date_part('epoch', e.recorded_at) AS at,
             date_part('epoch', c.recorded_at) AS created,
             CASE coalesce(e.data ->> 'winner', 'D') WHEN '0' THEN 0 WHEN '1' THEN 1 ELSE 2 END
             + CASE WHEN e.data ->> 'reason' IN ('resigned', 'timeout') THEN 4 ELSE 0 END
             + CASE WHEN e.data ->> 'reason' = 'aborted' THEN 8 ELSE 0 END AS code
      FROM events c JOIN events e ON e.match_id = c.match_id AND e.type = 'match_ended'
      WHERE c.type = 'match_created' AND c.data ->> 'ladder_id' = %(ladder)s
      ORDER BY e.position) AS ended
"""
# One row: every field of the ladder's results, in the order they ended, ids
# joined by tabs in one string and numbers as 8-byte big-endian arrays (split
# once, in C: no Python step per match), as the ratings' bulk reads ship them.
# One sort: the aggregates take the rows in the subquery's order (as
# ``packed``'s reads do); four ORDER BYs inside them sorted four times.
_MOVES_OF_LADDER = """
SELECT match_id,
       count(*) FILTER (WHERE type = 'card_played'),
       count(*) FILTER (WHERE timed AND seat = '0'),
       count(*) FILTER (WHERE timed AND seat = '1'),
       count(*) FILTER (WHERE timed AND seat = '0' AND think < %(fast)s),
       count(*) FILTER (WHERE timed AND seat = '1' AND think < %(fast)s)
FROM (SELECT ev.match_id, ev.type, ev.data ->> 'seat' AS seat,
             date_part('epoch', ev.recorded_at - lag(ev.recorded_at)
                 OVER (PARTITION BY ev.match_id ORDER BY ev.version)) AS think,
             ev.type IN ('card_played', 'passed')
                 AND (ev.data ->> 'automatic') IS DISTINCT FROM 'true' AS chosen
      FROM events ev
      WHERE ev.type = ANY(%(timed_from)s)
        AND EXISTS (SELECT 1 FROM events c WHERE c.match_id = ev.match_id AND c.version = 1
                    AND c.type = 'match_created' AND c.data ->> 'ladder_id' = %(ladder)s)
     ) AS timed_moves, LATERAL (SELECT chosen AND think IS NOT NULL AS timed) AS t
GROUP BY match_id
"""


def _int8s(raw: bytes) -> array[int]:
    values = array("q", bytes(raw))
    if sys.byteorder == "little":
        values.byteswap()
    return values


def _float8s(raw: bytes) -> array[float]:
    values = array("d", bytes(raw))
    if sys.byteorder == "little":
        values.byteswap()
    return values


def fairplay_log(ladder_id: str, fast_s: float) -> Op[FairPlayLog]:
    """What the fair-play signals read of a ladder (``FairPlayLog``), in three
    statements whatever its size; ``fast_s``: a move this quick is fast."""
    rows = yield Query(_ENDED_OF_LADDER, {"ladder": ladder_id})
    packed, positions, codes, times, created = rows[0]
    fields = str(packed).split("\t") if packed else []
    annulled = yield Query("SELECT match_id, min(position) FROM events"
                           " WHERE type = 'match_annulled' GROUP BY match_id")  # fmt: skip
    moves = yield Query(
        _MOVES_OF_LADDER, {"ladder": ladder_id, "fast": fast_s, "timed_from": list(TIMED_FROM)}
    )
    return FairPlayLog(
        match_ids=fields[0::3],
        player0=fields[1::3],
        player1=fields[2::3],
        ended_position=_int8s(positions),
        ended_code=_int8s(codes),
        ended_at=_float8s(times),
        created_at=_float8s(created),
        annulled={str(m): int(p) for m, p in annulled},
        moves={str(m): (int(c), int(a), int(b), int(fa), int(fb)) for m, c, a, b, fa, fb in moves},
    )


def annulled_among(match_ids: Sequence[str]) -> Op[set[str]]:
    """Which of these matches have their ``match_annulled``."""
    rows = yield Query(
        "SELECT match_id FROM events WHERE type = 'match_annulled' AND match_id = ANY(%s)",
        (list(match_ids),),
    )
    return {str(m) for (m,) in rows}


def accounts_of(player_ids: Sequence[str]) -> Op[list[tuple[str, datetime, bool]]]:
    """(player id, account created at, a service bot) of these players: what the
    fair-play signals know of accounts (``players``, ``bot_players``)."""
    rows = yield Query(
        "SELECT p.id, p.created_at, b.player_id IS NOT NULL"
        " FROM players p LEFT JOIN bot_players b ON b.player_id = p.id"
        " WHERE p.id = ANY(%s)",
        (list(player_ids),),
    )
    return [(str(p), at, bool(bot)) for p, at, bot in rows]


def ladders_of_the_log() -> Op[list[str]]:
    """Every ladder some match of the log was created on."""
    rows = yield Query(
        "SELECT DISTINCT data ->> 'ladder_id' FROM events"
        " WHERE type = 'match_created' AND data ->> 'ladder_id' IS NOT NULL ORDER BY 1"
    )
    return [str(ladder) for (ladder,) in rows]


def finished_ladder_matches_of_player(player_id: str) -> Op[list[str]]:
    """The player's matches on a ladder that ended (aborted or not), not annulled,
    oldest first: what closing the account for fair play voids."""
    rows = yield Query(
        "SELECT c.match_id FROM events c"
        " WHERE c.type = 'match_created' AND c.data -> 'players' ? %s"
        "   AND c.data ->> 'ladder_id' IS NOT NULL"
        "   AND EXISTS (SELECT 1 FROM events e WHERE e.match_id = c.match_id"
        "               AND e.type = 'match_ended')"
        "   AND NOT EXISTS (SELECT 1 FROM events a WHERE a.match_id = c.match_id"
        "                   AND a.type = 'match_annulled')"
        " ORDER BY c.position",
        (player_id,),
    )
    return [str(m) for (m,) in rows]
