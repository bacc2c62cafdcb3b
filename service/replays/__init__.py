"""Replay archives: a finished match as a portable record, plus its frames.

One idea per module:

* ``record``: the match record (``matcha-record/1``), like a chess PGN;
* ``frames``: what a viewer sees after each event, and the stored (delta) form;
* ``archive``: the archive (``matcha-replay/2``), packed to deterministic bytes,
  and ``build_of_log``, the one build every path uses;
* ``store``: the one loader and the one upsert (blocking for the worker, async
  for the API);
* ``served``: the ratings a record gains when it is served;
* ``check``: checking an imported record; ``signatures``: checking what the
  service signed about it (its receipts, its checkpoint proof).

Used by the API (replays, records, a match's outcome), the console
(``matcha verify``, ``matcha export``) and the workers: the archives projection
(``workers.projections.archives``) keeps archives current by following the log,
and the RQ jobs ``workers.replays.build_archive`` / ``build_archives`` build
them on request. docs/replays.md documents the formats. The names other parts
import are re-exported here.
"""

from service.replays.archive import (
    ARCHIVE_FORMAT,
    BuiltArchive,
    LogRow,
    ReplayArchive,
    StoredArchive,
    build_batch,
    build_of_log,
    decode_archive,
    pack,
    pack_states,
    record_of_log,
)
from service.replays.check import RecordCheck, check_record, redacted_event
from service.replays.frames import (
    ReplayFrame,
    StoredFrame,
    build_frames,
    expand_frames,
    frames_of_states,
    public_view,
    stored_frames,
)
from service.replays.record import (
    FORMAT,
    Headers,
    MatchRecord,
    PlayerTag,
    RecordedEvent,
    ResultTag,
    build_record,
    decode_record,
    encode_record,
    record_of_events,
)
from service.replays.served import (
    RATINGS_OF_MATCH,
    add_ratings,
    record_with_ratings,
    with_ratings_async,
)
from service.replays.store import (
    STORE_ARCHIVES,
    build_from_log,
    build_now_async,
    current_archive_async,
    load_logs,
    load_logs_async,
    record_from_log,
    store_archives,
    store_archives_async,
)

__all__ = [
    "ARCHIVE_FORMAT",
    "FORMAT",
    "RATINGS_OF_MATCH",
    "STORE_ARCHIVES",
    "BuiltArchive",
    "Headers",
    "LogRow",
    "MatchRecord",
    "PlayerTag",
    "RecordCheck",
    "RecordedEvent",
    "ReplayArchive",
    "ReplayFrame",
    "ResultTag",
    "StoredArchive",
    "StoredFrame",
    "add_ratings",
    "build_batch",
    "build_frames",
    "build_from_log",
    "build_now_async",
    "build_of_log",
    "build_record",
    "check_record",
    "current_archive_async",
    "decode_archive",
    "decode_record",
    "encode_record",
    "expand_frames",
    "frames_of_states",
    "load_logs",
    "load_logs_async",
    "pack",
    "pack_states",
    "public_view",
    "record_from_log",
    "record_of_events",
    "record_of_log",
    "record_with_ratings",
    "redacted_event",
    "store_archives",
    "store_archives_async",
    "stored_frames",
    "with_ratings_async",
]
