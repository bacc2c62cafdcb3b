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

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol

import msgspec
from psycopg import AsyncConnection, errors
from psycopg_pool import AsyncConnectionPool

from schemas.events import Event, decode_event, encode_event
from service.cache import Bounded
from service.errors import Conflict, ValidationFailed, VersionConflict
from service.store.chain import GENESIS_HASH, row_hash
from service.store.heads import blinded, head_message, head_salt, row_head_message

APPEND_LOCK_KEY = 0x6D61746368610001
"""Advisory lock: appends hold it shared until commit, ``read_all`` takes it
exclusively for an instant as a barrier (see the module docstring)."""

HEAD_CACHE_SIZE = 10_000
"""How many matches' last (version, hash) are remembered, to skip a read per append."""


class Signer(Protocol):
    """What the store signs heads with (``service.evidence.keys.SigningKey``)."""

    key_id: str

    def sign(self, message: bytes) -> bytes: ...


class Verifier(Protocol):
    """What checks a head read back from the table (``service.evidence.keys.Keyring``)."""

    def verify(self, key_id: str | None, message: bytes, signature: bytes | None) -> bool: ...


class UnsignedHead(Conflict):
    """The match's last row carries no valid service signature: appended by
    someone without the key (or the key is not in the keyring). Appending on
    top would sign a forgery into the chain, so the store refuses."""


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
    key_id: str | None = None
    """The key that signed this row (the last row of its append), else None."""
    signature: bytes | None = None
    """Ed25519 over ``service.store.heads.head_message`` of this row, else None."""
    blinded_hash: bytes | None = None
    """What the signature signs in place of ``hash`` (``heads.blinded``), on the
    signed rows an append returns (None on rows read back: it needs the seed)."""


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    first_version: int
    last_version: int
    positions: tuple[int, ...]
    replayed: bool = False
    """True: the idempotency key was used before; this is the first result, nothing appended."""
    stored: tuple[StoredEvent, ...] = ()
    """The rows this append wrote, in version order, as ``load`` would return them
    (empty when ``replayed``): the after-commit hooks need not read them back."""


_COLUMNS = (
    "position, match_id, version, type, data::text, actor, recorded_at, prev_hash, hash,"
    " key_id, signature"
)

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
INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash, hash,
                    key_id, signature)
SELECT %s::text, n.version, n.type, n.data::jsonb, %s::text, %s::timestamptz, n.prev_hash, n.hash,
       CASE WHEN n.signature IS NOT NULL THEN {key_id} END, n.signature
FROM barrier, (VALUES {rows}) AS n(version, type, data, prev_hash, hash, signature)
RETURNING position, version
"""

# The match, the actor and the time are the same for every row: sent once, so
# that a command's append stays under psycopg's 50 parameters for caching the
# parsed query (MAX_CACHED_STATEMENT_PARAMS) up to 5 events with a summary.
_ROW = "(%s::int, %s::text, %s::text, %s::bytea, %s::bytea, NULL::bytea)"
# The last row carries the signature (one parameter); the key id is part of
# the statement's text (a hex id, checked), so a 5-event append with its
# summary stays at 50 parameters.
_SIGNED_ROW = "(%s::int, %s::text, %s::text, %s::bytea, %s::bytea, %s::bytea)"
_KEY_ID = re.compile(r"[0-9a-f]{1,64}")


@lru_cache(maxsize=256)
def _append_sql(rows: int, also: tuple[str, ...] = (), key_id: str | None = None) -> str:
    """The append statement for `rows` events (scalar parameters: cheaper to send than arrays).

    One statement on an autocommit connection, so one implicit transaction and
    one round trip: the lock, the events, their signature, the idempotency
    key, the seed and the caller's ``also`` statements commit together or not
    at all. ``key_id`` None: an unsigned append (a store without a key).
    """
    extra = "".join(f",\nalso_{i} AS (\n{sql}\n)" for i, sql in enumerate(also))
    if key_id is None:
        values, key = ", ".join([_ROW] * rows), "NULL::text"
    else:
        if _KEY_ID.fullmatch(key_id) is None:
            raise ValueError(f"a key id is lower-case hex, not {key_id!r}")
        values, key = ", ".join([*[_ROW] * (rows - 1), _SIGNED_ROW]), f"'{key_id}'::text"
    return _APPEND_HEAD.format(rows=values, also=extra, key_id=key)


def event_type(event: Event) -> str:
    """The event's tag (its ``type`` in JSON and in the ``type`` column)."""
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def _row_to_stored(row: tuple[Any, ...]) -> StoredEvent:
    (
        position,
        match_id,
        version,
        type_,
        data,
        actor,
        recorded_at,
        prev_hash,
        hash_,
        key_id,
        signature,
    ) = row
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
        key_id=key_id,
        signature=None if signature is None else bytes(signature),
    )


async def unsigned_up_to(conn: AsyncConnection[Any]) -> int:
    """The last position written before the service signed anything (migration 0025)."""
    cur = await conn.execute("SELECT coalesce(max(unsigned_up_to), 0) FROM evidence_epoch")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


def head_is_signed(verifier: Verifier, event: StoredEvent, salt: bytes) -> bool:
    """``event`` carries a valid service signature of its own head."""
    return event.signature is not None and verifier.verify(
        event.key_id,
        row_head_message(
            key_id=event.key_id,
            match_id=event.match_id,
            version=event.version,
            hash_=event.hash,
            recorded_at=event.recorded_at,
            salt=salt,
        ),
        event.signature,
    )


class EventStore:
    """Appends and reads match events; `pool` lends autocommit connections (``open_pool``).

    ``signer``: the service's key; the last row of every append is signed
    with it (docs/event-store.md "Signatures"). ``verifier``: the public keys;
    with it the store refuses to append on top of a head it read back from the
    table that no service key signed (``UnsignedHead``), so a row inserted by
    someone without the key is never sealed into the chain by the service.
    Both None: unsigned appends (the state before signatures, and the bench's
    baseline).
    """

    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        signer: Signer | None = None,
        verifier: Verifier | None = None,
    ) -> None:
        self.pool = pool
        self.signer = signer
        self.verifier = verifier
        self._salts: Bounded[str, bytes] = Bounded(HEAD_CACHE_SIZE)
        """match_id -> its head salt (from its seed, which never changes)."""
        self._epoch: int | None = None
        """Rows up to this position predate signatures (``evidence_epoch``)."""
        # match_id -> (version, hash) of a committed row: a committed row never
        # changes, so a hit is always right for that version; it only saves the
        # read of the previous hash when the caller's expected version matches.
        self._heads: Bounded[str, tuple[int, bytes]] = Bounded(HEAD_CACHE_SIZE)

    # -- heads cache ---------------------------------------------------------------

    def _remember(self, match_id: str, version: int, hash_: bytes) -> None:
        self._heads.put_if(match_id, (version, hash_), lambda new, held: new[0] > held[0])

    async def _head(self, conn: AsyncConnection[Any], match_id: str) -> tuple[int, bytes]:
        """The match's last (version, hash), read from the table; checked when a
        verifier is set (``UnsignedHead``) before it is remembered."""
        cur = await conn.execute(
            "SELECT e.version, e.hash, e.recorded_at, e.key_id, e.signature, e.position, s.seed"
            " FROM events e LEFT JOIN match_seeds s ON s.match_id = e.match_id"
            " WHERE e.match_id = %s ORDER BY e.version DESC LIMIT 1",
            (match_id,),
        )
        row = await cur.fetchone()
        if row is None:
            return 0, GENESIS_HASH
        version, hash_ = row[0], bytes(row[1])
        salt = head_salt(row[6])
        self._remember_salt(match_id, salt)
        if self.verifier is not None and self._epoch is None:
            self._epoch = await unsigned_up_to(conn)
        if self._epoch is None or row[5] > self._epoch:  # legacy rows were never signed
            self._check_head(match_id, version, hash_, row[2], row[3], row[4], salt)
        self._remember(match_id, version, hash_)
        return version, hash_

    def _remember_salt(self, match_id: str, salt: bytes) -> None:
        self._salts.put(match_id, salt)

    async def _salt(self, conn: AsyncConnection[Any], match_id: str) -> bytes:
        """The match's head salt (``heads.head_salt`` of its seed), remembered."""
        known = self._salts.get(match_id)
        if known is not None:
            return known
        cur = await conn.execute("SELECT seed FROM match_seeds WHERE match_id = %s", (match_id,))
        row = await cur.fetchone()
        salt = head_salt(None if row is None else str(row[0]))
        self._remember_salt(match_id, salt)
        return salt

    def _check_head(
        self,
        match_id: str,
        version: int,
        hash_: bytes,
        recorded_at: datetime,
        key_id: str | None,
        signature: bytes | None,
        salt: bytes,
    ) -> None:
        if self.verifier is None:
            return
        message = row_head_message(
            key_id=key_id,
            match_id=match_id,
            version=version,
            hash_=hash_,
            recorded_at=recorded_at,
            salt=salt,
        )
        if signature is None or not self.verifier.verify(key_id, message, bytes(signature)):
            raise UnsignedHead(
                f"Version {version} of match {match_id} carries no valid service signature:"
                " it was not appended by the service. Nothing more can be appended until an"
                " admin audits the match.",
                code="match_log_unsigned",
            )

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
            signer = self.signer
            signature: bytes | None = None
            signed_by = None if signer is None else signer.key_id
            head_blind: bytes | None = None
            if signer is not None:
                if seed is not None:
                    salt = head_salt(seed)
                    self._remember_salt(match_id, salt)
                else:
                    salt = await self._salt(conn, match_id)
                head_blind = blinded(salt, hashes[-1])
                signature = signer.sign(
                    head_message(
                        key_id=signer.key_id,
                        match_id=match_id,
                        version=last,
                        blinded_hash=head_blind,
                        recorded_at=recorded_at,
                    )
                )

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
            if signature is not None:
                params.append(signature)
            try:
                cur = await conn.execute(
                    _append_sql(
                        len(events),
                        tuple(sql for sql, _ in also),
                        None if signer is None else signer.key_id,
                    ),
                    params,
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
                key_id=signed_by if version == last else None,
                signature=signature if version == last else None,
                blinded_hash=head_blind if version == last else None,
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
        # Remembered only when an append may build on it: a head the service
        # signed (checked here, in memory, instead of by a read at the append).
        # A head already remembered (appended or checked by this process) is not
        # checked again: the signature check was ~2 % of the API's CPU under
        # bench_evidence, paid on every fold-cache miss of the same head.
        if stored and (
            self._heads.get(match_id) == (stored[-1].version, stored[-1].hash)
            or self.verifier is None
            or (self._epoch is not None and stored[-1].position <= self._epoch)
            or (
                (salt := self._salts.get(match_id)) is not None
                and head_is_signed(self.verifier, stored[-1], salt)
            )
        ):
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
