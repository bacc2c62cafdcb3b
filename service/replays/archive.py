"""The replay archive (``matcha-replay/2``): a match record plus its frames, packed.

Deterministic bytes: the archive is canonical JSON (msgspec, fields in
declaration order) compressed with gzip at a fixed level and ``mtime=0``, and
it holds nothing that is not a function of the log (plus the players' and the
ladder's names). Ratings before and after the match are *not* stored: they are
another projection, which an annulment of an earlier match changes; the API
adds them to the headers when it serves a replay or exports a record
(``service.replays.served``).

``build_of_log`` builds one archive from a row of the one loader
(``service.replays.store.load_logs``); the worker's jobs, its projection and the
API's on-demand build all go through it, so they store the same bytes.
"""

from __future__ import annotations

import gc
import gzip
import hashlib
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

import msgspec
from isal import isal_zlib

from service.engine.state import State
from service.errors import NotFound
from service.replays.frames import (
    ReplayFrame,
    StoredFrame,
    expand_frames,
    frames_of_states,
    stored_frames,
)
from service.replays.record import MatchRecord, RecordedEvent, record_of_events
from service.store.matchlog import ArchiveLog

log = logging.getLogger("matcha.workers.replays")

ARCHIVE_FORMAT: Literal["matcha-replay/2"] = "matcha-replay/2"
"""2: each frame stores only the fields of its views that changed (docs/replays.md).
Archives of format 1 (every view whole) are still read."""
GZIP_LEVEL = 1
"""ISA-L's level (``isal``), fixed, like ``mtime=0``: the same archive always
compresses to the same bytes. docs/replays.md: why ISA-L, why this level."""
GZIP_WBITS = 31
"""zlib's way of asking for a gzip stream (header with mtime 0, CRC-32 trailer)."""


class ReplayArchive(msgspec.Struct, frozen=True, kw_only=True):
    """An archive as read (``decode_archive``): every frame whole."""

    format: str = ARCHIVE_FORMAT
    record: MatchRecord
    frames: list[ReplayFrame]


class StoredArchive(msgspec.Struct, frozen=True, kw_only=True):
    format: str = ARCHIVE_FORMAT
    record: MatchRecord
    frames: list[StoredFrame]


class _Format(msgspec.Struct):
    format: str


class BuiltArchive(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    data: bytes
    """gzip of the archive's canonical JSON."""
    sha256: bytes
    raw_size: int
    events: int
    final_hash: bytes
    position: int


LogRow = ArchiveLog
"""One match as the loader gives it (``service.replays.store.load_logs``): (match id,
events JSON or None if no such match, finished, names JSON, ladder name, hide hands)."""

_encoder = msgspec.json.Encoder()
_archive_decoder = msgspec.json.Decoder(ReplayArchive)
_stored_decoder = msgspec.json.Decoder(StoredArchive)
_format_decoder = msgspec.json.Decoder(_Format)
_events_decoder = msgspec.json.Decoder(list[RecordedEvent])
_names_decoder = msgspec.json.Decoder(dict[str, str])


def decode_archive(data: bytes) -> ReplayArchive:
    """An archive's bytes (format 1 or 2) with every frame whole."""
    raw = gzip.decompress(data)
    if _format_decoder.decode(raw).format != ARCHIVE_FORMAT:
        return _archive_decoder.decode(raw)
    stored = _stored_decoder.decode(raw)
    return ReplayArchive(
        format=stored.format, record=stored.record, frames=expand_frames(stored.frames)
    )


def _compress(raw: bytes) -> bytes:
    return isal_zlib.compress(raw, GZIP_LEVEL, GZIP_WBITS)


def pack(record: MatchRecord, frames: list[ReplayFrame]) -> tuple[bytes, int]:
    """Canonical JSON, gzip at a fixed level with mtime 0: (bytes, raw size)."""
    raw = _encoder.encode(StoredArchive(record=record, frames=stored_frames(frames)))
    return _compress(raw), len(raw)


def pack_states(record: MatchRecord, states: Sequence[State]) -> tuple[bytes, int]:
    """``pack(record, build_frames(record, states))``, the same bytes, cheaper."""
    raw = _encoder.encode(StoredArchive(record=record, frames=frames_of_states(record, states)))
    return _compress(raw), len(raw)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the build of one archive (or a batch).

    A build allocates tens of thousands of small, acyclic objects (states,
    views, frames), each allocation counting towards a collection that walks
    every tracked object, the view caches included: a third of the build's
    CPU time (measured: 3.15 -> 2.06 ms per archive). Reference counting frees
    them all anyway; the collector runs again as soon as the build is done.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def record_of_log(row: LogRow) -> tuple[MatchRecord, list[State]] | None:
    """The record of one ``load_logs`` row and the state after each event; None
    while the match is being played. Raises NotFound for an id with no events."""
    match_id, log, finished, names, ladder_name, hide = row
    if log is None:
        raise NotFound(f"No match has the id {match_id}.")
    if not finished:
        return None
    return record_of_events(
        match_id,
        _events_decoder.decode(log),
        names=_names_decoder.decode(names) if names else {},
        ladder_name=ladder_name,
        hide_hands_in_replay=bool(hide),
    )


def build_of_log(row: LogRow) -> BuiltArchive | None:
    """The archive of one ``load_logs`` row; None while the match is being played.

    Raises NotFound for an id with no events.
    """
    found = record_of_log(row)
    if found is None:
        return None
    record, states = found
    data, raw_size = pack_states(record, states)
    last = record.events[-1]
    return BuiltArchive(
        match_id=record.headers.match_id,
        data=data,
        sha256=hashlib.sha256(data).digest(),
        raw_size=raw_size,
        events=len(record.events),
        final_hash=bytes.fromhex(last.hash),
        position=last.position or 0,
    )


def build_batch(rows: Sequence[LogRow]) -> list[BuiltArchive]:
    """The archives of the finished matches among ``rows`` (others are skipped).

    Each archive is exactly ``build_of_log`` of its row: a batch only shares
    the query, the insert and the collector pause.
    """
    built: list[BuiltArchive] = []
    with collector_paused():
        for row in rows:
            if row[1] is None:
                continue  # no such match: nothing to archive (a batch is best effort)
            try:
                archive = build_of_log(row)
            except Exception:  # one log the build trips on must not cost the others theirs
                log.exception("could not build the replay archive of %s", row[0])
                continue
            if archive is not None:
                built.append(archive)
    return built
