"""The RQ job ``build_archives(match_ids)``: many archives at once, pipelined.

A backlog (a restore, a new archive format) is built fastest here: batched
loads and stores, the database's work beside the build (bench/bench_workers.py
``archive_builds_per_s``). Each archive is the one ``build_archive`` stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from service.replays.archive import BuiltArchive, build_batch
from service.replays.store import load_logs, store_archives
from workers import db

ARCHIVE_BATCH = 50
"""Matches per round trip when many archives are built at once (``build_archives``)."""
ARCHIVE_FIRST_BATCH = 10
"""The first round trip's: the worker waits for it with nothing to build meanwhile."""


def build_archives(
    match_ids: Sequence[str], *, database_url: str | None = None, batch: int = ARCHIVE_BATCH
) -> dict[str, Any]:
    """The RQ job for many matches at once: a backlog, or matches that ended together.

    Each archive is the one ``build_archive`` would store; what a batch shares
    is the round trips (one query loads ``batch`` matches, one statement stores
    their archives) and the job's own cost. While the worker builds one batch,
    a second thread loads the next and stores the previous one on the job's
    connection (the only thread using it meanwhile): the database's work runs
    beside the build instead of before and after it. Ids of unfinished or
    unknown matches are skipped.
    """
    conn = db.connection(database_url)
    ids = list(dict.fromkeys(match_ids))
    # a small first batch: its load is the one wait nothing runs beside
    first = min(batch, ARCHIVE_FIRST_BATCH)
    chunks = [ids[i : i + batch] for i in range(first, len(ids), batch)]
    if ids:
        chunks.insert(0, ids[:first])
    built: list[BuiltArchive] = []
    if len(chunks) == 1:
        built = build_batch(load_logs(conn, chunks[0]))
        store_archives(conn, built)
    elif chunks:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="archive-io") as io:
            # one thread, so its tasks run in order: load k+1, store k, load k+2, ...
            loading = io.submit(load_logs, conn, chunks[0])
            stored: list[Future[None]] = []
            for k in range(len(chunks)):
                rows = loading.result()
                if k + 1 < len(chunks):
                    loading = io.submit(load_logs, conn, chunks[k + 1])
                done = build_batch(rows)
                stored.append(io.submit(store_archives, conn, done))
                built.extend(done)
            for f in stored:
                f.result()
    return {
        "matches": len(ids),
        "built": len(built),
        "bytes": sum(len(b.data) for b in built),
        "events": sum(b.events for b in built),
    }
