"""One generic event stream: the table shape every aggregate's log shares.

A stream is a table of rows ``(position, <id>, version, type, data, actor,
recorded_at, prev_hash, hash)``: ``position`` drawn from the table's identity
sequence, ``(<id>, version)`` unique, every change refused by a trigger, each
row hash-chained to the one before with ``service.store.chain.row_hash``.
Match events (``events``), tournaments (``tournament_events``) and a ladder's
seasons (``ladder_events``) are three ``Stream`` values over three such
tables; nothing else differs between them but the event codec and the id the
chain hashes (a ladder's is ``ladder:<id>``).

What a stream does (each an ``Op``, run on a blocking or an async connection
by ``service.store.ops.run`` / ``run_async``):

* ``load(id, after=, limit=)``: the stream's rows after a version, in order;
* ``head(id)``: its last ``(version, hash)``;
* ``append(id, expected_version, events, actor=)``: the events as versions
  ``expected_version + 1 ...`` in ONE statement (so one transaction even on an
  autocommit connection). Optimistic concurrency as in eventsourcing: of two
  racing appends at one version, one INSERT meets the unique ``(id, version)``
  key and that writer gets ``VersionConflict``; nothing of it is written;
* ``last_position()``, ``committed_high()`` and ``read_after(position)``: the
  global order, with the barrier below.

The barrier. Positions are drawn when a row is inserted, but transactions
commit in another order: a reader that followed ``position > last`` could see
11 before 10 commits and never read 10. Every append therefore holds the
stream's advisory lock *shared* (``lock_key``) from before its INSERT draws
positions until it commits (shared locks never wait for each other);
``committed_high`` reads the sequence's last value ``H`` and then takes the
same lock *exclusively* for an instant, which waits until every append that
may own a position ``<= H`` has ended. Rows ``<= H`` are then final. Each
stream has its own key, so a long tournament transaction never holds up a
reader of the match log. docs/event-store.md ("Global order").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec
from psycopg import errors

from service.errors import ValidationFailed, VersionConflict
from service.store.chain import GENESIS_HASH, ChainBreak, row_hash, verify_chain
from service.store.ops import Op, Pause, Query, one

E = TypeVar("E")
"""The stream's event type (a tagged msgspec union)."""
R = TypeVar("R")
"""What a row of the stream reads back as."""

BARRIER_POLL_S = 0.005
"""Between two tries of the barrier (``committed_high(try_for=...)``)."""


class Head(NamedTuple):
    """A stream's last committed version and the hash of that row (0 and the
    genesis hash for a stream with no row)."""

    version: int
    hash: bytes


EMPTY = Head(0, GENESIS_HASH)


class Stored(msgspec.Struct, Generic[E], frozen=True, kw_only=True):
    """A row of a stream, as read back (or as an append wrote it)."""

    position: int
    """Global within the table: increasing in ``read_after`` order, with gaps."""
    stream_id: str
    version: int
    """1-based, gapless within the stream."""
    type: str
    event: E
    actor: str
    recorded_at: datetime
    prev_hash: bytes
    hash: bytes


class Chained(NamedTuple, Generic[E]):
    """A new row, chained, before the INSERT gives it a position."""

    version: int
    type: str
    data: str
    """The event's canonical bytes (``encode``) as text: what ``data`` stores."""
    prev_hash: bytes
    hash: bytes
    event: E


def _same(stream_id: str) -> str:
    return stream_id


def plain_row(
    position: int,
    stream_id: str,
    version: int,
    type_: str,
    event: E,
    actor: str,
    recorded_at: datetime,
    prev_hash: bytes,
    hash_: bytes,
    *extra: Any,
) -> Stored[E]:
    """The row type of a stream with no columns of its own (``Stored``)."""
    return Stored(
        position=position,
        stream_id=stream_id,
        version=version,
        type=type_,
        event=event,
        actor=actor,
        recorded_at=recorded_at,
        prev_hash=prev_hash,
        hash=hash_,
    )


_APPEND = """
WITH barrier AS (
    -- Held until commit; committed_high's barrier waits for it (module docstring).
    -- The rows below are produced only after this row exists, so the lock is
    -- taken before the INSERT draws positions from the sequence.
    SELECT pg_advisory_xact_lock_shared(%s)
){ctes}
INSERT INTO {table} ({id}, version, type, data, actor, recorded_at, prev_hash, hash{signed})
SELECT %s::text, n.version, n.type, n.data::jsonb, %s::text, %s::timestamptz, n.prev_hash,
       n.hash{signed_values}
FROM barrier, (VALUES {rows}) AS n(version, type, data, prev_hash, hash{signature}){linked}
RETURNING position, version
"""
_LINKED = """
WHERE EXISTS (SELECT 1 FROM {table} WHERE {id} = %s AND version = %s AND hash = %s)"""
# A caller that gives the head it builds on (its fold's) is held to it here, in
# the same statement: no row is inserted unless that head is the stream's (a
# unique-key probe), so a wrong one can never leave a gap or a broken link.
# The stream id, the actor and the time are the same for every row: sent once,
# so that a match command's append stays under psycopg's 50 parameters for
# caching the parsed query (MAX_CACHED_STATEMENT_PARAMS) up to 5 events with a
# summary. Scalar parameters: cheaper to send than arrays (psycopg escapes
# array text in Python).
_ROW = "(%s::int, %s::text, %s::text, %s::bytea, %s::bytea)"
_SIGNABLE_ROW = "(%s::int, %s::text, %s::text, %s::bytea, %s::bytea, NULL::bytea)"
_SIGNED_ROW = "(%s::int, %s::text, %s::text, %s::bytea, %s::bytea, %s::bytea)"

_TRY_BARRIER = "SELECT CASE WHEN pg_try_advisory_lock(%s) THEN pg_advisory_unlock(%s) END"
"""Take the lock exclusively if no append holds it, and drop it at once (CASE
evaluates its branches in order); NULL when it was held. Never queues."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Stream(Generic[E, R]):
    """One stream table and its codec; see the module docstring.

    ``row`` builds what a row reads back as from ``(position, id, version,
    type, event, actor, recorded_at, prev_hash, hash, *extra_columns)``;
    ``plain_row`` gives ``Stored``. ``signable``: the table has the match
    events' ``key_id`` and ``signature`` columns (migration 0025), which the
    append statement may fill on its last row.
    """

    label: str
    """What the stream is called in a conflict's sentence ("match", "tournament")."""
    table: str
    id_column: str
    lock_key: int
    """The barrier's advisory lock (one per stream)."""
    encode: Callable[[E], bytes]
    decode: Callable[[str | bytes], E]
    type_of: Callable[[E], str]
    row: Callable[..., R]
    chain_id: Callable[[str], str] = _same
    """The id hashed into the chain for a stream id (``row_hash``'s ``match_id``)."""
    extra_columns: tuple[str, ...] = ()
    signable: bool = False
    _sql: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        columns = ", ".join(
            (
                "position",
                self.id_column,
                "version, type, data::text, actor, recorded_at, prev_hash, hash",
                *self.extra_columns,
            )
        )
        sequence = f"{self.table}_position_seq"
        high = f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS position FROM {sequence}"
        self._sql.update(
            columns=columns,
            load=f"SELECT {columns} FROM {self.table} WHERE {self.id_column} = %s"
            " AND version > %s ORDER BY version LIMIT %s",
            head=f"SELECT version, hash FROM {self.table} WHERE {self.id_column} = %s"
            " ORDER BY version DESC LIMIT 1",
            last_position=high,
            # One statement: the sequence is read first (the lock's CTE scans
            # it), then the lock is had and dropped. A session-level lock, so
            # that it ends here whatever transaction the caller is in.
            settled=f"WITH high AS MATERIALIZED ({high}),"
            " barrier AS MATERIALIZED (SELECT pg_advisory_lock(%s) FROM high)"
            " SELECT high.position, pg_advisory_unlock(%s) FROM high, barrier",
            # The same with a bound on the wait (lock_timeout, local to the
            # statement's transaction): LockNotAvailable when it runs out.
            settled_within=f"WITH high AS MATERIALIZED ({high}),"
            " bound AS MATERIALIZED (SELECT set_config('lock_timeout', %s, true) FROM high),"
            " barrier AS MATERIALIZED (SELECT pg_advisory_lock(%s) FROM bound)"
            " SELECT high.position, pg_advisory_unlock(%s) FROM high, barrier",
            after=f"SELECT {columns} FROM {self.table} WHERE position > %s AND position <= %s"
            " ORDER BY position LIMIT %s",
            after_of_types=f"SELECT {columns} FROM {self.table} WHERE position > %s"
            " AND position <= %s AND type = ANY(%s) ORDER BY position LIMIT %s",
        )

    # -- rows ------------------------------------------------------------------------

    def read_row(self, values: Sequence[Any]) -> R:
        """A row of ``SELECT {columns}`` (``columns``) as the stream's row type."""
        position, stream_id, version, type_, data, actor, recorded_at, prev, hash_, *extra = values
        return self.row(
            position,
            stream_id,
            version,
            type_,
            self.decode(data),
            actor,
            recorded_at,
            bytes(prev),
            bytes(hash_),
            *extra,
        )

    @property
    def columns(self) -> str:
        """The select list ``read_row`` reads."""
        return self._sql["columns"]

    # -- reads -----------------------------------------------------------------------

    def load(self, stream_id: str, *, after: int = 0, limit: int | None = None) -> Op[list[R]]:
        """The stream's rows with version > ``after``, in version order ([] if none)."""
        rows = yield Query(self._sql["load"], (stream_id, after, limit))
        return [self.read_row(r) for r in rows]

    def head(self, stream_id: str) -> Op[Head]:
        """The stream's last version and its hash (``EMPTY`` if it has none)."""
        row = one((yield Query(self._sql["head"], (stream_id,))))
        return EMPTY if row is None else Head(int(row[0]), bytes(row[1]))

    # -- the global order ------------------------------------------------------------

    def last_position(self) -> Op[int]:
        """The last position handed out, committed or not (no barrier: cheap)."""
        row = one((yield Query(self._sql["last_position"])))
        return int(row[0]) if row else 0

    def committed_high(self, *, try_for: float = 0.0, wait_at_most: float | None = None) -> Op[int]:
        """A position ``H`` such that every row at or below it has committed or never
        will (the barrier: module docstring). Call it outside a long transaction:
        the rows it vouches for are read by later statements.

        ``try_for``: first *try* the lock (never queueing) every ``BARRIER_POLL_S``
        for that long: a queued exclusive request makes every new append queue
        behind it, so a reader that can wait a little spares the writers.
        ``wait_at_most``: then queue for it at most that long (``LockNotAvailable``).
        """
        if try_for > 0:
            high = yield from self.last_position()
        give_up = time.monotonic() + try_for
        while time.monotonic() < give_up:
            got = one((yield Query(_TRY_BARRIER, (self.lock_key, self.lock_key))))
            if got is not None and got[0]:
                return high
            yield Pause(BARRIER_POLL_S)
        if wait_at_most is None:
            row = one((yield Query(self._sql["settled"], (self.lock_key, self.lock_key))))
        else:
            bound = f"{max(1, round(wait_at_most * 1000))}ms"
            row = one(
                (yield Query(self._sql["settled_within"], (bound, self.lock_key, self.lock_key)))
            )
        return int(row[0]) if row else 0

    def read_after(
        self, position: int, *, limit: int = 1000, types: Sequence[str] | None = None
    ) -> Op[list[R]]:
        """Committed rows of every stream of the table with position > ``position``,
        in position order, at most ``limit``. A reader that passes the last
        position it saw never misses a row that commits late (the barrier)."""
        if (yield from self.last_position()) <= position:
            return []  # an idle poll skips the barrier
        high = yield from self.committed_high()
        if types is None:
            rows = yield Query(self._sql["after"], (position, high, limit))
        else:
            rows = yield Query(self._sql["after_of_types"], (position, high, list(types), limit))
        return [self.read_row(r) for r in rows]

    # -- append ----------------------------------------------------------------------

    def chain(
        self,
        stream_id: str,
        head: Head,
        events: Sequence[E],
        *,
        actor: str,
        recorded_at: datetime,
    ) -> list[Chained[E]]:
        """``events`` as the rows after ``head``, each hashed onto the one before."""
        chain_id = self.chain_id(stream_id)
        rows: list[Chained[E]] = []
        prev = head.hash
        for version, event in enumerate(events, start=head.version + 1):
            data = self.encode(event)
            hash_ = row_hash(
                prev,
                match_id=chain_id,
                version=version,
                actor=actor,
                recorded_at=recorded_at,
                event_bytes=data,
            )
            rows.append(Chained(version, self.type_of(event), data.decode(), prev, hash_, event))
            prev = hash_
        return rows

    def insert_sql(
        self,
        rows: int,
        ctes: tuple[str, ...] = (),
        key_id: str | None = None,
        *,
        linked: bool = False,
    ) -> str:
        """The append statement for ``rows`` rows; see ``insert_params``.

        ``ctes``: data-modifying statements (no RETURNING) run as CTEs of the same
        statement, so they commit with the rows or not at all at no extra round
        trip. ``key_id`` (a ``signable`` stream): the last row carries a
        signature parameter and this key id (part of the text: checked hex).
        ``linked``: insert nothing unless the head given to ``insert_params``
        is the stream's (not with ``ctes``: they would run anyway).
        """
        if linked and ctes:
            raise ValueError("a linked append cannot carry other statements")
        return _insert_sql(self.table, self.id_column, self.signable, rows, ctes, key_id, linked)

    def insert_params(
        self,
        stream_id: str,
        rows: Sequence[Chained[E]],
        *,
        actor: str,
        recorded_at: datetime,
        cte_params: Sequence[Any] = (),
        signature: bytes | None = None,
        link: Head | None = None,
    ) -> list[Any]:
        """The parameters of ``insert_sql(len(rows), ctes, key_id, linked=link is not
        None)``, in its order; ``link``: the head the rows build on."""
        params: list[Any] = [self.lock_key, *cte_params, stream_id, actor, recorded_at]
        for r in rows:
            params += [r.version, r.type, r.data, r.prev_hash, r.hash]
        if signature is not None:
            params.append(signature)
        if link is not None:
            params += [stream_id, link.version, link.hash]
        return params

    def stored(
        self,
        stream_id: str,
        rows: Sequence[Chained[E]],
        returned: Iterable[tuple[Any, ...]],
        *,
        actor: str,
        recorded_at: datetime,
    ) -> list[R]:
        """The rows an append wrote, with the positions its RETURNING gave."""
        position = dict((version, p) for p, version in returned)
        unset = (None,) * len(self.extra_columns)
        make = self.row
        return [
            make(
                position[r.version],
                stream_id,
                r.version,
                r.type,
                r.event,
                actor,
                recorded_at,
                r.prev_hash,
                r.hash,
                *unset,
            )
            for r in rows
        ]

    def conflict(self, stream_id: str, current: int | None, expected: int) -> VersionConflict:
        """The error of an append at ``expected`` (``current``: None when unknown)."""
        if current is None:
            return VersionConflict(
                f"{self.label} {stream_id} already has version {expected + 1} (another"
                f" append took it), you expected {expected}"
            )
        return VersionConflict(
            f"{self.label} {stream_id} is at version {current}, you expected {expected}"
        )

    def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[E],
        *,
        actor: str,
        prev_hash: bytes | None = None,
        recorded_at: datetime | None = None,
    ) -> Op[list[R]]:
        """Append ``events`` as versions ``expected_version + 1 ...``; the rows written.

        ``prev_hash``: the hash of version ``expected_version`` when the caller
        knows it (its fold, a row it holds locked), which saves the read of the
        head; the INSERT inserts nothing unless it is the stream's. Raises
        ``VersionConflict`` if the stream is not at ``expected_version`` with
        that hash: nothing is written.
        """
        if not events:
            raise ValidationFailed("an append needs at least one event")
        if expected_version < 0:
            raise ValidationFailed("expected_version cannot be negative")
        link = None  # the head is read here, or it is the genesis: nothing to hold to
        if expected_version == 0:
            head = EMPTY
        elif prev_hash is None:
            head = yield from self.head(stream_id)
            if head.version != expected_version:
                raise self.conflict(stream_id, head.version, expected_version)
        else:
            head = link = Head(expected_version, prev_hash)
        at = recorded_at or datetime.now(UTC)
        rows = self.chain(stream_id, head, events, actor=actor, recorded_at=at)
        try:
            returned = yield Query(
                self.insert_sql(len(rows), linked=link is not None),
                self.insert_params(stream_id, rows, actor=actor, recorded_at=at, link=link),
            )
        except errors.UniqueViolation as exc:
            # (id, version) is the table's only unique key besides the position.
            # The caller's transaction is aborted now: no read of the new head.
            raise self.conflict(stream_id, None, expected_version) from exc
        if not returned:  # the head given is not the stream's: nothing was inserted
            current = yield from self.head(stream_id)
            raise self.conflict(stream_id, current.version, expected_version)
        return self.stored(stream_id, rows, returned, actor=actor, recorded_at=at)

    # -- the chain -------------------------------------------------------------------

    def verify(self, rows: Iterable[Any]) -> ChainBreak | None:
        """Check one stream's rows (mappings with the column names, ``data`` as text)
        as ``chain.verify_chain`` checks a match's; the first break, or None."""
        return verify_chain(
            rows,
            id_column=self.id_column,
            chain_id=self.chain_id,
            decode=self.decode,
            encode=self.encode,
            type_of=self.type_of,
        )


@lru_cache(maxsize=256)
def _insert_sql(
    table: str,
    id_column: str,
    signable: bool,
    rows: int,
    ctes: tuple[str, ...],
    key_id: str | None,
    linked: bool,
) -> str:
    extra = "".join(f",\nalso_{i} AS (\n{sql}\n)" for i, sql in enumerate(ctes))
    if not signable:
        if key_id is not None:
            raise ValueError(f"the {table} table holds no signatures")
        values, signed, signed_values, signature = ", ".join([_ROW] * rows), "", "", ""
    else:
        signed, signature = ", key_id, signature", ", signature"
        if key_id is None:
            values, key = ", ".join([_SIGNABLE_ROW] * rows), "NULL::text"
        else:
            if not _is_key_id(key_id):
                raise ValueError(f"a key id is lower-case hex, not {key_id!r}")
            values = ", ".join([*[_SIGNABLE_ROW] * (rows - 1), _SIGNED_ROW])
            key = f"'{key_id}'::text"
        signed_values = f",\n       CASE WHEN n.signature IS NOT NULL THEN {key} END, n.signature"
    return _APPEND.format(
        ctes=extra,
        table=table,
        id=id_column,
        signed=signed,
        signed_values=signed_values,
        rows=values,
        signature=signature,
        linked=_LINKED.format(table=table, id=id_column) if linked else "",
    )


def _is_key_id(text: str) -> bool:
    return 1 <= len(text) <= 64 and all(c in "0123456789abcdef" for c in text)
