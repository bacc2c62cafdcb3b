"""The event store: append a match's events at an expected version, read them back.

The match events are one ``service.store.stream.Stream`` (``MATCH_EVENTS``):
the ``events`` table, its codec and its barrier key. ``EventStore`` adds what
only matches have: the command's idempotency key and the match's seed, written
in the append's one statement; the signature of each append's last row
(``service.store.heads``); and a cache of the heads it knows, so that an
append at the version it expects costs one round trip.

Optimistic concurrency: ``(match_id, version)`` is unique, so of two racing
appends at the same version one insert fails and that writer gets
``VersionConflict``; each append is one transaction, so nothing of the loser
is written. Global order for projections (``read_all``): the stream's barrier
(``APPEND_LOCK_KEY``). See docs/event-store.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

import msgspec
from psycopg import AsyncConnection, errors
from psycopg_pool import AsyncConnectionPool

from schemas.events import Event, decode_event, encode_event
from service.cache import Bounded
from service.errors import Conflict, ValidationFailed, VersionConflict
from service.store.chain import GENESIS_HASH, tag_of
from service.store.heads import blinded, head_message, head_salt, row_head_message
from service.store.ops import run_async
from service.store.stream import EMPTY, Chained, Head, Stream

APPEND_LOCK_KEY = 0x6D61746368610001
"""The match events' barrier (``service.store.stream``): appends hold it shared
until commit, ``read_all`` takes it exclusively for an instant."""

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


def event_type(event: Event) -> str:
    """The event's tag (its ``type`` in JSON and in the ``type`` column)."""
    return tag_of(event)


def _stored_event(
    position: int,
    match_id: str,
    version: int,
    type_: str,
    event: Event,
    actor: str,
    recorded_at: datetime,
    prev_hash: bytes,
    hash_: bytes,
    key_id: str | None = None,
    signature: bytes | None = None,
) -> StoredEvent:
    return StoredEvent(
        position=position,
        match_id=match_id,
        version=version,
        type=type_,
        event=event,
        actor=actor,
        recorded_at=recorded_at,
        prev_hash=prev_hash,
        hash=hash_,
        key_id=key_id,
        signature=None if signature is None else bytes(signature),
    )


MATCH_EVENTS: Stream[Event, StoredEvent] = Stream(
    label="match",
    table="events",
    id_column="match_id",
    lock_key=APPEND_LOCK_KEY,
    encode=encode_event,
    decode=decode_event,
    type_of=event_type,
    row=_stored_event,
    extra_columns=("key_id", "signature"),
    signable=True,
)
"""The match events' stream (``service.store.stream``): the table, the codec and
the barrier's key; ``EventStore`` adds the idempotency keys, the seeds, the
signatures and the heads cache on top."""

_NEW_KEY = """INSERT INTO idempotency_keys
    (actor, key, match_id, request_hash, first_version, last_version)
SELECT %s, %s::text, %s, %s, %s, %s WHERE %s::text IS NOT NULL"""
_NEW_SEED = (
    "INSERT INTO match_seeds (match_id, seed) SELECT %s, %s::text WHERE %s::text IS NOT NULL"
)


class _Signed(msgspec.Struct, frozen=True):
    """The signature of an append's last row (``heads.head_message``)."""

    key_id: str
    signature: bytes
    blinded_hash: bytes


async def unsigned_up_to(conn: AsyncConnection[Any]) -> int:
    """The last position written before the service signed anything (migration 0025)."""
    cur = await conn.execute("SELECT coalesce(max(unsigned_up_to), 0) FROM evidence_epoch")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


class SignedHead(Protocol):
    """A row's head as read back (a ``StoredEvent``, a ``matchlog.SignedRow``)."""

    @property
    def match_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def hash(self) -> bytes: ...
    @property
    def recorded_at(self) -> datetime: ...
    @property
    def key_id(self) -> str | None: ...
    @property
    def signature(self) -> bytes | None: ...


def head_is_signed(verifier: Verifier, event: SignedHead, salt: bytes) -> bool:
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
    #
    # One statement on an autocommit connection, so one implicit transaction and
    # one round trip: the barrier's lock, the events, their signature, the
    # idempotency key, the seed and the caller's ``also`` statements commit
    # together or not at all (MATCH_EVENTS.insert_sql). With the head remembered
    # it is the append's only round trip; the head is read first otherwise.

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
        _check_append(events, expected_version, seed)
        key = None if idempotency_key is None else _Key(actor, idempotency_key, request_hash)
        async with self.pool.connection() as conn:
            head = await self._head_at(conn, match_id, expected_version)
            if not isinstance(head, Head):
                earlier = await self._replay_of(conn, match_id, key)
                if earlier is not None:
                    return earlier
                raise head
            at = recorded_at or datetime.now(UTC)
            rows = MATCH_EVENTS.chain(match_id, head, events, actor=actor, recorded_at=at)
            signed = await self._sign(conn, match_id, rows[-1], at, seed)
            sql, params = _statement(match_id, rows, actor, at, key, seed, also, signed)
            try:
                cur = await conn.execute(sql, params)
                returned = await cur.fetchall()
            except errors.UniqueViolation as exc:
                # The key, the version or the seed was taken by a committed
                # append. A used key means a retry: it wins over the conflict.
                earlier = await self._replay_of(conn, match_id, key)
                if earlier is not None:
                    return earlier
                current, _ = await self._head(conn, match_id)
                raise MATCH_EVENTS.conflict(match_id, current, expected_version) from exc
        self._remember(match_id, rows[-1].version, rows[-1].hash)
        stored = MATCH_EVENTS.stored(match_id, rows, returned, actor=actor, recorded_at=at)
        return _result(stored, signed)

    async def _head_at(
        self, conn: AsyncConnection[Any], match_id: str, expected_version: int
    ) -> Head | VersionConflict:
        """The head an append at ``expected_version`` builds on (remembered, else
        read), or the conflict when the match is elsewhere."""
        if expected_version == 0:
            return EMPTY
        cached = self._heads.get(match_id)
        if cached is not None and cached[0] == expected_version:
            return Head(*cached)
        current, prev_hash = await self._head(conn, match_id)
        if current != expected_version:
            return MATCH_EVENTS.conflict(match_id, current, expected_version)
        return Head(current, prev_hash)

    async def _replay_of(
        self, conn: AsyncConnection[Any], match_id: str, key: _Key | None
    ) -> AppendResult | None:
        """The first result of ``key`` if it was used already, else None."""
        if key is None:
            return None
        return await self._replay(conn, match_id, key.actor, key.key, key.request_hash)

    async def _sign(
        self,
        conn: AsyncConnection[Any],
        match_id: str,
        last: Chained[Event],
        recorded_at: datetime,
        seed: str | None,
    ) -> _Signed | None:
        """The signature of the append's last row (None: a store without a key)."""
        signer = self.signer
        if signer is None:
            return None
        if seed is not None:
            salt = head_salt(seed)
            self._remember_salt(match_id, salt)
        else:
            salt = await self._salt(conn, match_id)
        head_blind = blinded(salt, last.hash)
        message = head_message(
            key_id=signer.key_id,
            match_id=match_id,
            version=last.version,
            blinded_hash=head_blind,
            recorded_at=recorded_at,
        )
        return _Signed(signer.key_id, signer.sign(message), head_blind)

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
            stored = await run_async(conn, MATCH_EVENTS.load(match_id, after=after, limit=limit))
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
        commits late (the barrier: ``service.store.stream``).
        """
        async with self.pool.connection() as conn:
            return await run_async(
                conn, MATCH_EVENTS.read_after(after_position, limit=limit, types=types)
            )


class _Key(NamedTuple):
    """A command's idempotency key, with who used it and the request it was for."""

    actor: str
    key: str
    request_hash: str | None


def _check_append(events: Sequence[Event], expected_version: int, seed: str | None) -> None:
    if not events:
        raise ValidationFailed("an append needs at least one event")
    if expected_version < 0:
        raise ValidationFailed("expected_version cannot be negative")
    if seed is not None and expected_version != 0:
        raise ValidationFailed("a match's seed is stored only with its first events")


def _statement(
    match_id: str,
    rows: Sequence[Chained[Event]],
    actor: str,
    recorded_at: datetime,
    key: _Key | None,
    seed: str | None,
    also: Sequence[tuple[str, Sequence[Any]]],
    signed: _Signed | None,
) -> tuple[str, list[Any]]:
    """The append's one statement: the rows, with the idempotency key, the seed
    and the caller's ``also`` as CTEs (each skipped by its WHERE when absent)."""
    used, request_hash = (None, None) if key is None else (key.key, key.request_hash)
    first, last = rows[0].version, rows[-1].version
    cte_params: list[Any] = [actor, used, match_id, request_hash, first, last, used]
    cte_params += [match_id, seed, seed]
    for _, also_params in also:
        cte_params += also_params
    sql = MATCH_EVENTS.insert_sql(
        len(rows),
        (_NEW_KEY, _NEW_SEED, *(sql for sql, _ in also)),
        None if signed is None else signed.key_id,
    )
    params = MATCH_EVENTS.insert_params(
        match_id,
        rows,
        actor=actor,
        recorded_at=recorded_at,
        cte_params=cte_params,
        signature=None if signed is None else signed.signature,
    )
    return sql, params


def _result(stored: list[StoredEvent], signed: _Signed | None) -> AppendResult:
    """What an append answers; its last row carries the signature, if any."""
    if signed is not None:
        stored[-1] = msgspec.structs.replace(
            stored[-1],
            key_id=signed.key_id,
            signature=signed.signature,
            blinded_hash=signed.blinded_hash,
        )
    return AppendResult(
        first_version=stored[0].version,
        last_version=stored[-1].version,
        positions=tuple(e.position for e in stored),
        stored=tuple(stored),
    )
