"""The event store: append a match's events at an expected version, read them back.

Optimistic concurrency: ``(match_id, version)`` is unique, so of two racing
appends at the same version one insert fails and that writer gets
``VersionConflict``; each append is one transaction, so nothing of the loser
is written.

Global order for projections (``read_all``): positions come from a sequence
when a row is inserted, but transactions commit in another order, so a reader
that simply followed ``position > last`` could see position 11 before 10
commits and then never read 10. Every append therefore holds a *shared*
advisory lock (``APPEND_LOCK_KEY``) from before its INSERT takes positions
until it commits; appends never wait for each other on it. ``read_all`` first
reads the sequence's last value ``L``, then takes and at once drops the same
lock *exclusively*: that waits until every append that could hold a position
``<= L`` has committed or rolled back. Rows ``<= L`` are then final and the
reader returns them in position order; positions above ``L`` wait for its
next call. See docs/event-store.md ("Global order").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import msgspec
from psycopg import AsyncConnection, errors
from psycopg_pool import AsyncConnectionPool

from schemas.events import Event, decode_event, encode_event
from service.cache import Bounded
from service.errors import Conflict, ValidationFailed, VersionConflict
from service.store.chain import GENESIS_HASH, row_hash

APPEND_LOCK_KEY = 0x6D61746368610001
"""Advisory lock: appends hold it shared until commit, ``read_all`` takes it
exclusively for an instant as a barrier (see the module docstring)."""

HEAD_CACHE_SIZE = 10_000
"""How many matches' last (version, hash) are remembered, to skip a read per append."""


class StoredEvent(msgspec.Struct, frozen=True, kw_only=True):
    position: int
    """Global position: increasing in ``read_all`` order, with gaps."""
    match_id: str
    version: int
    """1-based, gapless within the match."""
    type: str
    event: Event
    actor: str
    """Player id, admin id, or ``system``."""
    recorded_at: datetime
    prev_hash: bytes
    hash: bytes


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    first_version: int
    last_version: int
    positions: tuple[int, ...]
    replayed: bool = False
    """True: the idempotency key was used before; this is the first result, nothing appended."""
    stored: tuple[StoredEvent, ...] = ()
    """The rows this append wrote, in version order, as ``load`` would return them
    (empty when ``replayed``): the after-commit hooks need not read them back."""


_COLUMNS = "position, match_id, version, type, data::text, actor, recorded_at, prev_hash, hash"

_APPEND_HEAD = """
WITH barrier AS (
    -- Held until commit; read_all's barrier waits for it (module docstring).
    -- The events below are produced only after this row exists, so the lock
    -- is taken before the INSERT draws positions from the sequence.
    SELECT pg_advisory_xact_lock_shared(%s)
),
new_key AS (
    INSERT INTO idempotency_keys
        (actor, key, match_id, request_hash, first_version, last_version)
    SELECT %s, %s::text, %s, %s, %s, %s WHERE %s::text IS NOT NULL
),
new_seed AS (
    INSERT INTO match_seeds (match_id, seed) SELECT %s, %s::text WHERE %s::text IS NOT NULL
){also}
INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash, hash)
SELECT %s::text, n.version, n.type, n.data::jsonb, %s::text, %s::timestamptz, n.prev_hash, n.hash
FROM barrier, (VALUES {rows}) AS n(version, type, data, prev_hash, hash)
RETURNING position, version
"""

# The match, the actor and the time are the same for every row: sent once, so
# that a command's append stays under psycopg's 50 parameters for caching the
# parsed query (MAX_CACHED_STATEMENT_PARAMS) up to 5 events with a summary.
_ROW = "(%s::int, %s::text, %s::text, %s::bytea, %s::bytea)"


@lru_cache(maxsize=256)
def _append_sql(rows: int, also: tuple[str, ...] = ()) -> str:
    """The append statement for `rows` events (scalar parameters: cheaper to send than arrays).

    One statement on an autocommit connection, so one implicit transaction and
    one round trip: the lock, the events, the idempotency key, the seed and the
    caller's ``also`` statements commit together or not at all.
    """
    extra = "".join(f",\nalso_{i} AS (\n{sql}\n)" for i, sql in enumerate(also))
    return _APPEND_HEAD.format(rows=", ".join([_ROW] * rows), also=extra)


def event_type(event: Event) -> str:
    """The event's tag (its ``type`` in JSON and in the ``type`` column)."""
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def _row_to_stored(row: tuple[Any, ...]) -> StoredEvent:
    position, match_id, version, type_, data, actor, recorded_at, prev_hash, hash_ = row
    return StoredEvent(
        position=position,
        match_id=match_id,
        version=version,
        type=type_,
        event=decode_event(data),
        actor=actor,
        recorded_at=recorded_at,
        prev_hash=bytes(prev_hash),
        hash=bytes(hash_),
    )


class EventStore:
    """Appends and reads match events; `pool` lends autocommit connections (``open_pool``)."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        # match_id -> (version, hash) of a committed row: a committed row never
        # changes, so a hit is always right for that version; it only saves the
        # read of the previous hash when the caller's expected version matches.
        self._heads: Bounded[str, tuple[int, bytes]] = Bounded(HEAD_CACHE_SIZE)

    # -- heads cache ---------------------------------------------------------------

    def _remember(self, match_id: str, version: int, hash_: bytes) -> None:
        self._heads.put_if(match_id, (version, hash_), lambda new, held: new[0] > held[0])

    async def _head(self, conn: AsyncConnection[Any], match_id: str) -> tuple[int, bytes]:
        cur = await conn.execute(
            "SELECT version, hash FROM events WHERE match_id = %s ORDER BY version DESC LIMIT 1",
            (match_id,),
        )
        row = await cur.fetchone()
        if row is None:
            return 0, GENESIS_HASH
        self._remember(match_id, row[0], bytes(row[1]))
        return row[0], bytes(row[1])

    # -- append ----------------------------------------------------------------------

    async def append(
        self,
        match_id: str,
        expected_version: int,
        events: Sequence[Event],
        *,
        actor: str,
        idempotency_key: str | None = None,
        request_hash: str | None = None,
        seed: str | None = None,
        also: Sequence[tuple[str, Sequence[Any]]] = (),
        recorded_at: datetime | None = None,
    ) -> AppendResult:
        """Append `events` as versions ``expected_version + 1 ...`` in one transaction.

        ``also``: ``(sql, params)`` data-modifying statements (INSERT, UPDATE or
        DELETE with ``%s`` placeholders, no RETURNING) that commit in the same
        transaction as the events, e.g. a projection kept in step with them
        (run as CTEs of the append's one statement, so no extra round trip).
        They are skipped when the append is a replay of an idempotency key.

        Raises VersionConflict if the match is not at `expected_version` (nothing
        is written), Conflict(``idempotency_key_reused``) if this actor used
        `idempotency_key` for a different request. A repeated key returns the
        first result with ``replayed=True``.

        ``recorded_at``: when the events happened (the instant the command that
        caused them was taken, which the rules may have read); now by default.
        """
        if not events:
            raise ValidationFailed("an append needs at least one event")
        if expected_version < 0:
            raise ValidationFailed("expected_version cannot be negative")
        if seed is not None and expected_version != 0:
            raise ValidationFailed("a match's seed is stored only with its first events")

        async with self.pool.connection() as conn:
            if expected_version == 0:
                prev_hash = GENESIS_HASH
            else:
                cached = self._heads.get(match_id)
                if cached is not None and cached[0] == expected_version:
                    prev_hash = cached[1]
                else:
                    current, prev_hash = await self._head(conn, match_id)
                    if current != expected_version:
                        if idempotency_key is not None:
                            earlier = await self._replay(
                                conn, match_id, actor, idempotency_key, request_hash
                            )
                            if earlier is not None:
                                return earlier
                        raise VersionConflict(
                            _conflict_sentence(match_id, current, expected_version)
                        )

            if recorded_at is None:
                recorded_at = datetime.now(UTC)
            versions: list[int] = []
            types: list[str] = []
            datas: list[str] = []
            prevs: list[bytes] = []
            hashes: list[bytes] = []
            for offset, event in enumerate(events, start=1):
                version = expected_version + offset
                event_bytes = encode_event(event)
                hash_ = row_hash(
                    prev_hash,
                    match_id=match_id,
                    version=version,
                    actor=actor,
                    recorded_at=recorded_at,
                    event_bytes=event_bytes,
                )
                versions.append(version)
                types.append(event_type(event))
                datas.append(event_bytes.decode())
                prevs.append(prev_hash)
                hashes.append(hash_)
                prev_hash = hash_
            first, last = versions[0], versions[-1]

            params: list[Any] = [
                APPEND_LOCK_KEY,
                *(actor, idempotency_key, match_id, request_hash, first, last, idempotency_key),
                *(match_id, seed, seed),
            ]
            for _, also_params in also:
                params += also_params
            params += [match_id, actor, recorded_at]
            for version, type_, data, prev, hash_ in zip(
                versions, types, datas, prevs, hashes, strict=True
            ):
                params += [version, type_, data, prev, hash_]
            try:
                cur = await conn.execute(
                    _append_sql(len(events), tuple(sql for sql, _ in also)), params
                )
                rows = await cur.fetchall()
            except errors.UniqueViolation as exc:
                # The key, the version or the seed was taken by a committed
                # append. A used key means a retry: it wins over the conflict.
                if idempotency_key is not None:
                    earlier = await self._replay(
                        conn, match_id, actor, idempotency_key, request_hash
                    )
                    if earlier is not None:
                        return earlier
                current, _ = await self._head(conn, match_id)
                raise VersionConflict(
                    _conflict_sentence(match_id, current, expected_version)
                ) from exc

        self._remember(match_id, last, hashes[-1])
        positions = tuple(position for position, _ in sorted(rows, key=lambda r: r[1]))
        stored = tuple(
            StoredEvent(
                position=position,
                match_id=match_id,
                version=version,
                type=type_,
                event=event,
                actor=actor,
                recorded_at=recorded_at,
                prev_hash=prev,
                hash=hash_,
            )
            for position, version, type_, event, prev, hash_ in zip(
                positions, versions, types, events, prevs, hashes, strict=True
            )
        )
        return AppendResult(
            first_version=first, last_version=last, positions=positions, stored=stored
        )

    async def _replay(
        self,
        conn: AsyncConnection[Any],
        match_id: str,
        actor: str,
        key: str,
        request_hash: str | None,
    ) -> AppendResult | None:
        """The first result of an idempotency key already used by `actor`, or None."""
        cur = await conn.execute(
            "SELECT match_id, request_hash, first_version, last_version"
            " FROM idempotency_keys WHERE actor = %s AND key = %s",
            (actor, key),
        )
        row = await cur.fetchone()
        if row is None:
            return None
        used_match, used_hash, first, last = row
        if used_match != match_id or used_hash != request_hash:
            raise Conflict(
                f"idempotency key {key!r} was already used for a different request",
                code="idempotency_key_reused",
            )
        cur = await conn.execute(
            "SELECT position FROM events WHERE match_id = %s AND version BETWEEN %s AND %s"
            " ORDER BY version",
            (match_id, first, last),
        )
        positions = tuple(p for (p,) in await cur.fetchall())
        return AppendResult(
            first_version=first, last_version=last, positions=positions, replayed=True
        )

    async def used_key(self, actor: str, key: str) -> tuple[str, str | None, int] | None:
        """``(match_id, request_hash, last_version)`` of an idempotency key ``actor``
        already used, or None."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT match_id, request_hash, last_version FROM idempotency_keys"
                " WHERE actor = %s AND key = %s",
                (actor, key),
            )
            row = await cur.fetchone()
        return None if row is None else (str(row[0]), row[1], int(row[2]))

    async def dispute_match(self, dispute_id: str) -> str | None:
        """The match a dispute was filed on, or None."""
        # Few rows are dispute_filed, and (type, position) is indexed: no
        # index of our own is needed to find a dispute's match.
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT match_id FROM events WHERE type = 'dispute_filed'"
                " AND data ->> 'dispute_id' = %s",
                (dispute_id,),
            )
            row = await cur.fetchone()
        return None if row is None else str(row[0])

    # -- reads -----------------------------------------------------------------------

    async def load(
        self, match_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        """The match's events with version > `after`, in version order ([] if none)."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE match_id = %s AND version > %s"
                " ORDER BY version LIMIT %s",
                (match_id, after, limit),
            )
            rows = await cur.fetchall()
        stored = [_row_to_stored(row) for row in rows]
        if stored:
            self._remember(match_id, stored[-1].version, stored[-1].hash)
        return stored

    async def version(self, match_id: str) -> int:
        """The match's current version (0: no events)."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT coalesce(max(version), 0) FROM events WHERE match_id = %s", (match_id,)
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def load_seed(self, match_id: str) -> str | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,)
            )
            row = await cur.fetchone()
        return None if row is None else str(row[0])

    async def read_all(
        self,
        *,
        after_position: int = 0,
        limit: int = 1000,
        types: Sequence[str] | None = None,
    ) -> list[StoredEvent]:
        """Committed events of every match with position > `after_position`, in position order.

        A reader that passes the last position it saw never misses an event that
        commits late (see the module docstring for the barrier that ensures it).
        """
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM events_position_seq"
            )
            row = await cur.fetchone()
            high = int(row[0]) if row else 0
            if high <= after_position:
                return []
            # The barrier: every append that may hold a position <= high holds
            # the shared lock until it ends, so this waits for all of them.
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK_KEY,))
            if types is None:
                cur = await conn.execute(
                    f"SELECT {_COLUMNS} FROM events WHERE position > %s AND position <= %s"
                    " ORDER BY position LIMIT %s",
                    (after_position, high, limit),
                )
            else:
                cur = await conn.execute(
                    f"SELECT {_COLUMNS} FROM events WHERE position > %s AND position <= %s"
                    " AND type = ANY(%s) ORDER BY position LIMIT %s",
                    (after_position, high, list(types), limit),
                )
            rows = await cur.fetchall()
        return [_row_to_stored(row) for row in rows]


def _conflict_sentence(match_id: str, current: int, expected: int) -> str:
    return f"match {match_id} is at version {current}, you expected {expected}"
