"""The one archive loader and the one archive upsert, for the worker and the API alike.

* ``load_logs`` loads what a build needs (``archive.LogRow``), for one match or
  a whole batch in one round trip (``service.store.matchlog.logs_for_archives``);
* ``STORE_ARCHIVES`` upserts built archives in one statement: an archive built
  from an older log never replaces a newer one, and one of the same log with
  other bytes (a newer builder) replaces the old;
* ``CURRENT_ARCHIVE`` reads a stored archive together with the match's head,
  so a reader knows in one round trip whether the archive is the log's.

Each statement has a blocking twin (the worker: ``load_logs``,
``store_archives``) and an async one (the API: ``load_logs_async``,
``store_archives_async``, ``current_archive_async``, ``build_now_async``),
built from the same SQL and the same parameters: the two copies drifted once
(the API's upsert had lost the sha256 condition).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from anyio import to_thread
from psycopg import AsyncConnection

from service.errors import NotFound
from service.replays.archive import (
    ARCHIVE_FORMAT,
    BuiltArchive,
    LogRow,
    build_of_log,
    collector_paused,
    record_of_log,
)
from service.replays.record import MatchRecord
from service.store import matchlog
from service.store.ops import run, run_async

STORE_ARCHIVES = """
INSERT INTO replay_archives (match_id, format, archive, sha256, raw_size, events, final_hash,
                             built_at_position)
SELECT a.* FROM unnest(%b::text[], %b::text[], %b::bytea[], %b::bytea[], %b::integer[],
                       %b::integer[], %b::bytea[], %b::bigint[]) a,
     -- this statement's own transaction only (or its caller's): see store_archives
     (SELECT set_config('synchronous_commit', 'off', true)) no_flush_wait
ON CONFLICT (match_id) DO UPDATE SET
    format = excluded.format, archive = excluded.archive, sha256 = excluded.sha256,
    raw_size = excluded.raw_size, events = excluded.events, final_hash = excluded.final_hash,
    built_at_position = excluded.built_at_position, built_at = now()
WHERE replay_archives.built_at_position < excluded.built_at_position
   OR replay_archives.sha256 <> excluded.sha256
"""

CURRENT_ARCHIVE = f"""
SELECT h.hash, a.archive, a.sha256, a.final_hash
FROM {matchlog.last_row_of("%(match_id)s")} h
LEFT JOIN replay_archives a ON a.match_id = %(match_id)s
"""
"""The match's head hash and its stored archive (NULLs when none): no row, no match."""


def _store_params(built: Sequence[BuiltArchive]) -> tuple[list[Any], ...] | None:
    """The upsert's arrays, one row per match (of two archives of one match, the last)."""
    latest = list({b.match_id: b for b in built}.values())
    if not latest:
        return None
    return (
        [b.match_id for b in latest],
        [ARCHIVE_FORMAT] * len(latest),
        [b.data for b in latest],
        [b.sha256 for b in latest],
        [b.raw_size for b in latest],
        [b.events for b in latest],
        [b.final_hash for b in latest],
        [b.position for b in latest],
    )


# -- blocking (the worker) ----------------------------------------------------------------


def load_logs(conn: psycopg.Connection[Any], match_ids: Sequence[str]) -> list[LogRow]:
    """``matchlog.logs_for_archives``: one row per id, in order."""
    return run(conn, matchlog.logs_for_archives(match_ids))


def store_archives(conn: psycopg.Connection[Any], built: Sequence[BuiltArchive]) -> None:
    """Upsert, in one statement (see the module docstring).

    Committed without waiting for the WAL flush (``synchronous_commit`` off, set
    local to the transaction: on an autocommit connection the statement's own,
    one round trip): an archive is a projection of the log, and one lost to a
    crash is rebuilt (by the archives projection, whose position is lost with
    it, or on demand by the API). Inside a caller's transaction the setting
    lasts to its end, which is what the projection wants (its position commits
    with the archives).
    """
    params = _store_params(built)
    if params is not None:
        conn.execute(STORE_ARCHIVES, params)


def build_from_log(conn: psycopg.Connection[Any], match_id: str) -> BuiltArchive | None:
    """The archive of a finished match from its log, or None while it is being played."""
    (row,) = load_logs(conn, [match_id])
    with collector_paused():
        return build_of_log(row)


def record_from_log(conn: psycopg.Connection[Any], match_id: str) -> MatchRecord | None:
    """The match record (no frames) of a finished match, or None while it is played
    (or when there is no such match)."""
    (row,) = load_logs(conn, [match_id])
    found = None if row[1] is None else record_of_log(row)
    return None if found is None else found[0]


# -- async (the API) ----------------------------------------------------------------------


async def load_logs_async(conn: AsyncConnection[Any], match_ids: Sequence[str]) -> list[LogRow]:
    """``load_logs`` on an async connection."""
    return await run_async(conn, matchlog.logs_for_archives(match_ids))


async def store_archives_async(conn: AsyncConnection[Any], built: Sequence[BuiltArchive]) -> None:
    """``store_archives`` on an async (autocommit) connection."""
    params = _store_params(built)
    if params is not None:
        await conn.execute(STORE_ARCHIVES, params)


async def current_archive_async(
    conn: AsyncConnection[Any], match_id: str
) -> tuple[bytes, bytes] | None:
    """(archive, sha256) when the stored archive is the log's as it stands; None when
    there is none or it is older than the log (then ``build_now_async``).
    ``NotFound`` for a match with no events."""
    cur = await conn.execute(CURRENT_ARCHIVE, {"match_id": match_id})
    row = await cur.fetchone()
    if row is None:
        raise NotFound("No match has this id.")
    head, data, digest, final_hash = row
    if data is None or bytes(final_hash) != bytes(head):
        return None
    return bytes(data), bytes(digest)


async def build_now_async(conn: AsyncConnection[Any], match_id: str) -> BuiltArchive:
    """Build the match's archive from its log now and store it (the API, on demand).

    ``NotFound`` (``match_not_finished``) while the match is being played. The
    build runs in a thread: it is CPU work of a few milliseconds per match.
    """
    (row,) = await load_logs_async(conn, [match_id])
    if row[1] is None:
        raise NotFound("No match has this id.")
    if not row[2]:
        raise NotFound(
            "The match is not finished: its replay exists once it ends.", code="match_not_finished"
        )

    def build() -> BuiltArchive | None:
        with collector_paused():
            return build_of_log(row)

    built = await to_thread.run_sync(build)
    assert built is not None  # finished, checked above
    await store_archives_async(conn, [built])
    return built
