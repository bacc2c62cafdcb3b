"""The tournament stream: ``tournament_events``, append-only and hash-chained.

The chain is the match events' chain (``service.store.chain``): the same
``row_hash`` over the same canonical bytes, with the tournament id where a
match's id goes and the tournament event's msgspec JSON as the event bytes;
version 1 links to ``GENESIS_HASH``. Appends run inside the caller's
transaction (``service.tournaments.service`` holds the tournament's row
lock and writes the projections in the same one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from psycopg import AsyncConnection, errors

from schemas.tournaments import (
    TournamentEvent,
    decode_tournament_event,
    encode_tournament_event,
    tournament_event_type,
)
from service.errors import VersionConflict
from service.store.chain import GENESIS_HASH, ChainBreak, row_hash


class StoredTournamentEvent(msgspec.Struct, frozen=True, kw_only=True):
    position: int
    tournament_id: str
    version: int
    type: str
    event: TournamentEvent
    actor: str
    recorded_at: datetime
    prev_hash: bytes
    hash: bytes


_COLUMNS = "position, tournament_id, version, type, data::text, actor, recorded_at, prev_hash, hash"


def _stored(row: Sequence[Any]) -> StoredTournamentEvent:
    position, tournament_id, version, type_, data, actor, recorded_at, prev, hash_ = row
    return StoredTournamentEvent(
        position=position,
        tournament_id=tournament_id,
        version=version,
        type=type_,
        event=decode_tournament_event(data),
        actor=actor,
        recorded_at=recorded_at,
        prev_hash=bytes(prev),
        hash=bytes(hash_),
    )


async def load(
    conn: AsyncConnection[Any], tournament_id: str, *, after: int = 0
) -> list[StoredTournamentEvent]:
    """The tournament's events with version > ``after``, in version order."""
    cur = await conn.execute(
        f"SELECT {_COLUMNS} FROM tournament_events WHERE tournament_id = %s AND version > %s"
        " ORDER BY version",
        (tournament_id, after),
    )
    return [_stored(row) for row in await cur.fetchall()]


async def head(conn: AsyncConnection[Any], tournament_id: str) -> tuple[int, bytes]:
    cur = await conn.execute(
        "SELECT version, hash FROM tournament_events WHERE tournament_id = %s"
        " ORDER BY version DESC LIMIT 1",
        (tournament_id,),
    )
    row = await cur.fetchone()
    return (0, GENESIS_HASH) if row is None else (int(row[0]), bytes(row[1]))


async def append(
    conn: AsyncConnection[Any],
    tournament_id: str,
    expected_version: int,
    events: Sequence[TournamentEvent],
    *,
    actor: str,
    prev_hash: bytes | None = None,
) -> list[StoredTournamentEvent]:
    """Append ``events`` as versions ``expected_version + 1 ...`` in the caller's transaction.

    ``prev_hash``: the hash of ``expected_version`` if the caller knows it
    (else it is read). Raises ``VersionConflict`` when that version is taken.
    """
    if not events:
        return []
    if prev_hash is None:
        current, prev_hash = await head(conn, tournament_id)
        if current != expected_version:
            raise VersionConflict(
                f"tournament {tournament_id} is at version {current}, not {expected_version}"
            )
    recorded_at = datetime.now(UTC)
    rows: list[tuple[Any, ...]] = []
    stored: list[StoredTournamentEvent] = []
    for offset, event in enumerate(events, start=1):
        version = expected_version + offset
        data = encode_tournament_event(event)
        hash_ = row_hash(
            prev_hash,
            match_id=tournament_id,
            version=version,
            actor=actor,
            recorded_at=recorded_at,
            event_bytes=data,
        )
        type_ = tournament_event_type(event)
        rows.append(
            (tournament_id, version, type_, data.decode(), actor, recorded_at, prev_hash, hash_)
        )
        stored.append(
            StoredTournamentEvent(
                position=0,
                tournament_id=tournament_id,
                version=version,
                type=type_,
                event=event,
                actor=actor,
                recorded_at=recorded_at,
                prev_hash=prev_hash,
                hash=hash_,
            )
        )
        prev_hash = hash_
    values = ", ".join(["(%s, %s, %s, %s::jsonb, %s, %s, %s, %s)"] * len(rows))
    try:
        cur = await conn.execute(
            "INSERT INTO tournament_events"
            " (tournament_id, version, type, data, actor, recorded_at, prev_hash, hash)"
            f" VALUES {values} RETURNING position, version",
            [value for row in rows for value in row],
        )
        found = sorted(await cur.fetchall(), key=lambda r: r[1])
    except errors.UniqueViolation as exc:
        raise VersionConflict(
            f"tournament {tournament_id} moved past version {expected_version}"
        ) from exc
    positions = [int(r[0]) for r in found]
    return [msgspec.structs.replace(s, position=p) for s, p in zip(stored, positions, strict=True)]


def verify_tournament_chain(rows: Iterable[Mapping[str, Any]]) -> ChainBreak | None:
    """Check one tournament's rows (``data`` as text) the way ``chain.verify_chain``
    checks a match's: versions gapless, each row linked to the one before,
    its data canonical and its hash its own. The first break, or None."""
    expected_prev = GENESIS_HASH
    for expected_version, row in enumerate(sorted(rows, key=lambda r: r["version"]), start=1):
        tid, version = row["tournament_id"], row["version"]

        def broken(problem: Any, detail: str, at: int = version, tid: str = tid) -> ChainBreak:
            return ChainBreak(match_id=tid, version=at, problem=problem, detail=detail)

        if version != expected_version:
            return broken("version_gap", f"version {expected_version} is missing", expected_version)
        if bytes(row["prev_hash"]) != expected_prev:
            return broken(
                "prev_hash_mismatch", f"version {version} does not link to the one before"
            )
        try:
            event = decode_tournament_event(row["data"])
        except msgspec.DecodeError as exc:
            return broken("undecodable_data", f"version {version} is not a valid event: {exc}")
        data = encode_tournament_event(event)
        if msgspec.json.decode(data) != msgspec.json.decode(row["data"]):
            return broken("not_canonical", f"version {version} holds data that is not its event")
        if row["type"] != tournament_event_type(event):
            return broken("type_mismatch", f"version {version} has the wrong type")
        expected = row_hash(
            expected_prev,
            match_id=tid,
            version=version,
            actor=row["actor"],
            recorded_at=row["recorded_at"],
            event_bytes=data,
        )
        if bytes(row["hash"]) != expected:
            return broken("hash_mismatch", f"version {version} was changed after it was written")
        expected_prev = bytes(row["hash"])
    return None
