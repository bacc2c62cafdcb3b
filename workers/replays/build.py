"""The RQ job ``build_archive(match_id)``: (re)build one finished match's archive.

The archives projection (``workers.projections.archives``) keeps every archive
current by itself; this job is for an operator who wants one archive built now
(``service.broker.jobs.enqueue_archive``). Safe to run twice: the upsert keeps the
newest archive.
"""

from __future__ import annotations

from typing import Any

from service.replays.store import build_from_log, store_archives
from workers import db


def build_archive(match_id: str, *, database_url: str | None = None) -> dict[str, Any]:
    """The RQ job: (re)build and store the replay archive of a finished match."""
    conn = db.connection(database_url)
    built = build_from_log(conn, match_id)
    if built is None:
        return {"match_id": match_id, "built": False, "reason": "not finished"}
    store_archives(conn, [built])
    return {"match_id": match_id, "built": True, "bytes": len(built.data), "events": built.events}
