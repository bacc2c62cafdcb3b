"""The tournament stream: ``tournament_events``, one ``service.store.stream.Stream``.

The chain is the match events' chain (``service.store.chain.row_hash``) with
the tournament id where a match's id goes and the tournament event's msgspec
JSON as the event bytes; version 1 links to ``GENESIS_HASH``. Appends run
inside the caller's transaction (``service.tournaments.service`` holds the
tournament's row lock and writes the projections in the same one), and hold
the stream's barrier lock until it commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from psycopg import AsyncConnection

from schemas.tournaments import (
    TournamentEvent,
    decode_tournament_event,
    encode_tournament_event,
    tournament_event_type,
)
from service.store.chain import ChainBreak
from service.store.ops import run_async
from service.store.stream import Stored, Stream, plain_row

TOURNAMENT_LOCK_KEY: Final = 0x6D61746368610010
"""The tournament stream's barrier (``Stream.committed_high``)."""

StoredTournamentEvent: TypeAlias = Stored[TournamentEvent]

TOURNAMENT_EVENTS: Stream[TournamentEvent, StoredTournamentEvent] = Stream(
    label="tournament",
    table="tournament_events",
    id_column="tournament_id",
    lock_key=TOURNAMENT_LOCK_KEY,
    encode=encode_tournament_event,
    decode=decode_tournament_event,
    type_of=tournament_event_type,
    row=plain_row,
)


async def load(
    conn: AsyncConnection[Any], tournament_id: str, *, after: int = 0
) -> list[StoredTournamentEvent]:
    """The tournament's events with version > ``after``, in version order."""
    return await run_async(conn, TOURNAMENT_EVENTS.load(tournament_id, after=after))


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
    return await run_async(
        conn,
        TOURNAMENT_EVENTS.append(
            tournament_id, expected_version, events, actor=actor, prev_hash=prev_hash
        ),
    )


def verify_tournament_chain(rows: Iterable[Mapping[str, Any]]) -> ChainBreak | None:
    """Check one tournament's rows (``data`` as text) the way ``chain.verify_chain``
    checks a match's: the first break, or None."""
    return TOURNAMENT_EVENTS.verify(rows)
