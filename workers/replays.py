"""Replay archives: a finished match as a portable record, plus its frames.

The *match record* (``MatchRecord``) is what a chess PGN is to a game: headers
(ladder, players, ruleset, dates, result and how it ended, seed, final chain
hash) and every event with what its hash covers (version, actor, time, the
previous hash), so anyone can re-check the chain, re-fold the events through
the engine and re-deal from the seed. The *archive* adds the frames a viewer
steps through: after each event, the public view and the omniscient view,
both built by ``service.engine.view`` (the one place that decides visibility),
stored as the fields that changed since the previous frame (format 2).

Deterministic bytes: the archive is canonical JSON (msgspec, fields in
declaration order) compressed with gzip at a fixed level and ``mtime=0``, and
it holds nothing that is not a function of the log (plus the players' and the
ladder's names). Ratings before and after the match are *not* stored: they are
another projection, which an annulment of an earlier match changes; the API
adds them to the headers when it serves a replay or exports a record.

``build_archive(match_id)`` is the RQ job; ``check_record`` verifies an
imported record (chain, re-fold, fairness) with the audit's pure checks.
docs/replays.md documents the format.
"""

from __future__ import annotations

import gc
import gzip
import hashlib
import logging
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec
import psycopg
from isal import isal_zlib

from schemas.events import Event, MatchCreated, MatchEnded, decode_event, encode_event
from schemas.rules import Ruleset
from schemas.views import EventView, MatchView, PairView, SeatView
from service.engine import initial_state, redact, view
from service.engine.evolve import apply
from service.engine.state import State, freeze, thaw
from service.errors import NotFound, ValidationFailed
from service.evidence.checkpoints import InclusionProof
from service.evidence.keys import PublicKey
from service.evidence.receipts import Receipt
from service.store.chain import GENESIS_HASH, format_recorded_at, row_hash
from workers import db

log = logging.getLogger("matcha.workers.replays")

FORMAT: Literal["matcha-record/1"] = "matcha-record/1"
ARCHIVE_FORMAT: Literal["matcha-replay/2"] = "matcha-replay/2"
"""2: each frame stores only the fields of its views that changed (docs/replays.md).
Archives of format 1 (every view whole) are still read."""
GZIP_LEVEL = 1
"""ISA-L's level (``isal``), fixed, like ``mtime=0``: the same archive always
compresses to the same bytes. docs/replays.md: why ISA-L, why this level."""
GZIP_WBITS = 31
"""zlib's way of asking for a gzip stream (header with mtime 0, CRC-32 trailer)."""

Result = Literal["1-0", "0-1", "1/2-1/2", "annulled", "*"]


class PlayerTag(msgspec.Struct, frozen=True, kw_only=True):
    seat: Literal[0, 1]
    id: str
    name: str | None = None
    rating_before: float | None = None
    rating_after: float | None = None
    """Filled when served (the ratings projection), never stored."""


class Headers(msgspec.Struct, frozen=True, kw_only=True):
    """The match at a glance, like a PGN's tag pairs."""

    format: str = FORMAT
    match_id: str
    ladder_id: str | None
    ladder: str | None
    """The ladder's name."""
    ruleset: Ruleset
    players: tuple[PlayerTag, PlayerTag]
    date: str
    """``YYYY.MM.DD`` (UTC) of the first event, as in a PGN."""
    started_at: str
    ended_at: str | None
    result: Result
    """Seat 0's score first: ``1-0`` seat 0 won, ``0-1`` seat 1, ``1/2-1/2`` a draw."""
    winner: Literal[0, 1] | None
    reason: str | None
    """How it ended: qualified, comparison, hand_limit, resigned, timeout."""
    annulled: bool
    hands: int
    seed_commitment: str
    seed: str | None
    dealing_scheme: str
    events: int
    final_hash: str
    """Hex SHA-256 of the last event's chain link: the record's fingerprint."""
    hide_hands_in_replay: bool = False


class RecordedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One event with everything its chain hash covers."""

    version: int
    actor: str
    recorded_at: str
    """UTC, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``: exactly the text that was hashed."""
    prev_hash: str
    hash: str
    event: Event
    position: int | None = None
    """Global position in the store it came from (not hashed)."""


class MatchRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    headers: Headers
    events: list[RecordedEvent]
    # Added when exported (service/evidence/record.py), never stored in an archive:
    receipt: Receipt | None = None
    """The service's signature of the last event's head: with the chain, of every event."""
    keys: list[PublicKey] = []
    """The service's public keys (pin your own copy from ``GET /api/keys``)."""
    checkpoint: InclusionProof | None = None
    """The match's leaf in the latest signed checkpoint, and its inclusion proof."""
    problems: list[str] = []
    """What the audit found wrong with the log (empty: it holds up)."""


class Frame(msgspec.Struct, frozen=True, kw_only=True):
    """What a viewer sees after event ``version``."""

    version: int
    type: str
    omniscient: MatchView
    public: MatchView | None = None
    """None: the same as ``omniscient`` (a finished match shows everyone
    everything, RULES §8, unless its ladder hides hands in replays)."""

    def public_view(self) -> MatchView:
        return self.omniscient if self.public is None else self.public


class ReplayArchive(msgspec.Struct, frozen=True, kw_only=True):
    """An archive as read (``decode_archive``): every frame whole."""

    format: str = ARCHIVE_FORMAT
    record: MatchRecord
    frames: list[Frame]


class StoredFrame(msgspec.Struct, frozen=True, kw_only=True):
    """A frame as format 2 stores it: the ``MatchView`` fields that changed.

    ``omniscient``: the fields of this frame's omniscient view that differ
    from the previous frame's (the first frame: every field). ``public``:
    None, the same as ``omniscient``; else the fields of the public view that
    differ from the previous frame's public view (the first: every field).
    """

    version: int
    type: str
    omniscient: dict[str, Any]
    public: dict[str, Any] | None = None


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


_encoder = msgspec.json.Encoder()
_archive_decoder = msgspec.json.Decoder(ReplayArchive)
_stored_decoder = msgspec.json.Decoder(StoredArchive)
_format_decoder = msgspec.json.Decoder(_Format)
_record_decoder = msgspec.json.Decoder(MatchRecord)


def encode_record(record: MatchRecord) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes | str) -> MatchRecord:
    try:
        return _record_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise ValidationFailed(f"not a match record: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise ValidationFailed(f"not JSON: {exc}") from exc


def decode_archive(data: bytes) -> ReplayArchive:
    """An archive's bytes (format 1 or 2) with every frame whole."""
    raw = gzip.decompress(data)
    if _format_decoder.decode(raw).format != ARCHIVE_FORMAT:
        return _archive_decoder.decode(raw)
    stored = _stored_decoder.decode(raw)
    return ReplayArchive(
        format=stored.format, record=stored.record, frames=expand_frames(stored.frames)
    )


_VIEW_FIELDS = MatchView.__struct_fields__


_BY_ELEMENT = ("seats", "tatami")
"""Stored element by element (``_changes``): a seat or a pair is never null."""


def _differ(
    cls: type[msgspec.Struct], name: str, by_element: tuple[str, ...] = ()
) -> Any:
    """A function ``(new, old) -> {field: new value}`` of the fields of ``cls``
    whose values differ, in field order; the fields in ``by_element``, when as
    long as before, go element by element (``_elements``).

    Written out field by field from ``cls.__struct_fields__`` when this module
    is loaded (as ``dataclasses`` writes ``__init__``): a frame compares ~20
    fields, most of them the very objects of the previous view (the engine's
    view caches), and a loop over ``zip`` of two ``astuple``s cost 1.8x as much.
    A field is unchanged when it is equal: ``is`` only saves the comparison.
    """
    lines = [f"def {name}(new, old):", "    changed = {}"]
    for field in cls.__struct_fields__:
        value = ("_elements(a, b) if len(a) == len(b) else a" if field in by_element
                 else "a")
        lines += [
            f"    a = new.{field}",
            f"    b = old.{field}",
            "    if a is not b and a != b:",
            f"        changed[{field!r}] = {value}",
        ]
    lines.append("    return changed")
    namespace: dict[str, Any] = {"_elements": _elements}
    exec("\n".join(lines), namespace)  # our own field names: nothing from outside
    return namespace[name]


def _elements(value: tuple[Any, ...], before: tuple[Any, ...]) -> list[Any]:
    """A changed ``seats``/``tatami`` of the same length, element by element:
    None for a seat or pair equal to before, else the fields of it that differ."""
    return [
        None if new is old or new == old else _PART_CHANGES[type(new)](new, old)
        for new, old in zip(value, before, strict=True)
    ]


_PART_CHANGES: dict[type, Any] = {
    SeatView: _differ(SeatView, "_seat_changes"),
    PairView: _differ(PairView, "_pair_changes"),
}
_view_changes = _differ(MatchView, "_view_changes", _BY_ELEMENT)


def _changes(new: MatchView, old: MatchView | None) -> dict[str, Any]:
    """The fields of a view that differ from ``old``'s, in field order.

    ``seats`` and ``tatami`` (when as long as before) go element by element:
    null for a seat or pair that did not change, else its changed fields (a
    card played changes one seat and one pair, and of that pair one target).
    The first frame (``old`` None) has every field.
    """
    if old is None:
        return dict(zip(_VIEW_FIELDS, msgspec.structs.astuple(new), strict=True))
    changed: dict[str, Any] = _view_changes(new, old)
    return changed


def _apply(view: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``view`` (JSON fields) with ``changes`` (``_changes``) applied."""
    merged = view | changes
    for name in _BY_ELEMENT:
        value = changes.get(name)
        if value is not None and name in view and len(value) == len(view[name]):
            merged[name] = [
                b if v is None else b | v for v, b in zip(value, view[name], strict=True)
            ]
    return merged


def stored_frames(frames: Sequence[Frame]) -> list[StoredFrame]:
    """Frames as format 2 stores them (see ``StoredFrame``)."""
    out: list[StoredFrame] = []
    omniscient: MatchView | None = None
    public: MatchView | None = None
    for f in frames:
        out.append(StoredFrame(
            version=f.version,
            type=f.type,
            omniscient=_changes(f.omniscient, omniscient),
            public=None if f.public is None else _changes(f.public, public),
        ))
        omniscient, public = f.omniscient, f.public_view()
    return out


def expand_frames(stored: Sequence[StoredFrame]) -> list[Frame]:
    """Whole frames from stored ones (the inverse of ``stored_frames``)."""
    frames: list[Frame] = []
    omniscient: dict[str, Any] = {}
    public: dict[str, Any] = {}
    for s in stored:
        omniscient = _apply(omniscient, s.omniscient)
        o = msgspec.convert(omniscient, MatchView)
        if s.public is None:
            public = omniscient
            frames.append(Frame(version=s.version, type=s.type, omniscient=o))
        else:
            public = _apply(public, s.public)
            frames.append(Frame(version=s.version, type=s.type, omniscient=o,
                                public=msgspec.convert(public, MatchView)))
    return frames


# -- building ------------------------------------------------------------------------------


def _result(state: State) -> Result:
    if state.annulled:
        return "annulled"
    if not state.ended:
        return "*"
    if state.winner is None:
        return "1/2-1/2"
    return "1-0" if state.winner == 0 else "0-1"


def public_view(state: State, hide_hands_in_replay: bool) -> MatchView:
    """The frame anyone may watch once the match is over (RULES §8).

    A finished match shows everything to everyone ("anyone after the match
    ends" sees what an administrator sees), which for an earlier state is the
    engine's omniscient view; a ladder that hides hands in replays shows each
    earlier state as a live spectator saw it, and the last as the engine's
    replay view with hands hidden.
    """
    over = state.ended or state.annulled
    if over:
        return view(state, "spectator", hide_hands_in_replay=hide_hands_in_replay)
    return view(state, "spectator" if hide_hands_in_replay else "omniscient")


def _public_frame(state: State, omniscient: MatchView, hide: bool) -> MatchView:
    """``public_view``, without building the omniscient view a second time."""
    if not hide and not (state.ended or state.annulled):
        return omniscient
    return public_view(state, hide)


def build_record(
    match_id: str,
    rows: Sequence[tuple[int, int, str, Event, str, datetime, bytes, bytes]],
    *,
    names: dict[str, str],
    ladder_name: str | None,
    hide_hands_in_replay: bool,
) -> tuple[MatchRecord, list[State]]:
    """The record of a match and the state after each event.

    ``rows``: (position, version, type, event, actor, recorded_at, prev_hash,
    hash) in version order.
    """
    events = [
        RecordedEvent(
            version=version,
            actor=actor,
            recorded_at=format_recorded_at(recorded_at),
            prev_hash=prev_hash.hex(),
            hash=hash_.hex(),
            event=event,
            position=position,
        )
        for position, version, _type, event, actor, recorded_at, prev_hash, hash_ in rows
    ]
    return record_of_events(
        match_id, events, names=names, ladder_name=ladder_name,
        hide_hands_in_replay=hide_hands_in_replay,
    )


def record_of_events(
    match_id: str,
    events: list[RecordedEvent],
    *,
    names: dict[str, str],
    ladder_name: str | None,
    hide_hands_in_replay: bool,
) -> tuple[MatchRecord, list[State]]:
    """``build_record`` from the recorded events (in version order)."""
    if not events:
        raise NotFound(f"match {match_id} has no events")
    # evolve(state, event) is thaw, apply, freeze: one table carried through
    # the log and frozen after each event gives the same states, a copy fewer.
    states: list[State] = []
    table = thaw(initial_state())
    for e in events:
        apply(table, e.event)
        states.append(freeze(table))
    state = states[-1]
    created = events[0].event
    if not isinstance(created, MatchCreated):
        raise ValidationFailed(f"match {match_id} does not start with match_created")
    ended_at = next(
        (e.recorded_at for e in events if isinstance(e.event, MatchEnded)), None
    )
    players = (
        PlayerTag(seat=0, id=created.players[0], name=names.get(created.players[0])),
        PlayerTag(seat=1, id=created.players[1], name=names.get(created.players[1])),
    )
    headers = Headers(
        match_id=match_id,
        ladder_id=created.ladder_id,
        ladder=ladder_name,
        ruleset=created.ruleset,
        players=(players[0], players[1]),
        date=events[0].recorded_at[:10].replace("-", "."),
        started_at=events[0].recorded_at,
        ended_at=ended_at,
        result=_result(state),
        winner=state.winner if state.ended and not state.annulled else None,
        reason=state.end_reason,
        annulled=state.annulled,
        hands=state.hand,
        seed_commitment=created.seed_commitment,
        seed=state.seed if (state.ended or state.annulled) else None,
        dealing_scheme=created.dealing_scheme,
        events=len(events),
        final_hash=events[-1].hash,
        hide_hands_in_replay=hide_hands_in_replay,
    )
    return MatchRecord(headers=headers, events=events), states


def build_frames(record: MatchRecord, states: Sequence[State]) -> list[Frame]:
    hide = record.headers.hide_hands_in_replay
    frames = []
    for e, s in zip(record.events, states, strict=True):
        omniscient = view(s, "omniscient")
        public = _public_frame(s, omniscient, hide)
        frames.append(Frame(
            version=e.version,
            type=_tag(e.event),
            omniscient=omniscient,
            public=None if public is omniscient else public,
        ))
    return frames


_TAGS: dict[type, str] = {}


def _tag(event: Event) -> str:
    kind = type(event)
    tag = _TAGS.get(kind)
    if tag is None:
        tag = _TAGS[kind] = str(kind.__struct_config__.tag)
    return tag


def _compress(raw: bytes) -> bytes:
    return isal_zlib.compress(raw, GZIP_LEVEL, GZIP_WBITS)


def pack(record: MatchRecord, frames: list[Frame]) -> tuple[bytes, int]:
    """Canonical JSON, gzip at a fixed level with mtime 0: (bytes, raw size)."""
    raw = _encoder.encode(StoredArchive(record=record, frames=stored_frames(frames)))
    return _compress(raw), len(raw)


def frames_of_states(record: MatchRecord, states: Sequence[State]) -> list[StoredFrame]:
    """``stored_frames(build_frames(record, states))`` in one pass (the worker's path).

    The same views (``view`` and ``_public_frame``, as ``build_frames``) and
    the same changes (``_changes``, as ``stored_frames``), without the whole
    ``Frame`` of every step in between: tests/workers/test_replays.py checks
    that both give the same bytes.
    """
    hide = record.headers.hide_hands_in_replay
    changes, frame, tag = _changes, StoredFrame, _tag
    out: list[StoredFrame] = []
    omniscient: MatchView | None = None
    public: MatchView | None = None
    for e, s in zip(record.events, states, strict=True):
        seen = view(s, "omniscient")
        if not hide and not (s.ended or s.annulled):  # _public_frame(s, seen, hide) is seen
            out.append(frame(version=e.version, type=tag(e.event),
                             omniscient=changes(seen, omniscient)))
            public = seen
        else:
            shown = _public_frame(s, seen, hide)
            out.append(frame(version=e.version, type=tag(e.event),
                             omniscient=changes(seen, omniscient),
                             public=changes(shown, public)))
            public = shown
        omniscient = seen
    return out


def pack_states(record: MatchRecord, states: Sequence[State]) -> tuple[bytes, int]:
    """``pack(record, build_frames(record, states))``, the same bytes, cheaper."""
    raw = _encoder.encode(StoredArchive(record=record, frames=frames_of_states(record, states)))
    return _compress(raw), len(raw)


# -- the database side ---------------------------------------------------------------------


def load_rows(
    conn: psycopg.Connection, match_id: str
) -> list[tuple[int, int, str, Event, str, datetime, bytes, bytes]]:
    rows = conn.execute(
        "SELECT position, version, type, data::text, actor, recorded_at, prev_hash, hash"
        " FROM events WHERE match_id = %s ORDER BY version",
        (match_id,),
    ).fetchall()
    return [
        (p, v, t, decode_event(d), a, at, bytes(ph), bytes(h))
        for p, v, t, d, a, at, ph, h in rows
    ]


def _context(
    conn: psycopg.Connection, created: Event
) -> tuple[dict[str, str], str | None, bool]:
    assert isinstance(created, MatchCreated)
    names: dict[str, str] = dict(
        conn.execute(
            "SELECT id, name FROM players WHERE id = ANY(%s)", (list(created.players),)
        ).fetchall()
    )
    ladder_name, hide = None, False
    if created.ladder_id is not None:
        row = conn.execute(
            "SELECT name, hide_hands_in_replay FROM ladders WHERE id = %s", (created.ladder_id,)
        ).fetchone()
        if row is not None:
            ladder_name, hide = row[0], bool(row[1])
    return names, ladder_name, hide


LOGS_FOR_ARCHIVES = """
SELECT m.match_id,
    (SELECT json_agg(json_build_object(
         'version', e.version, 'actor', e.actor,
         'recorded_at', to_char(e.recorded_at AT TIME ZONE 'UTC',
                                'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
         'prev_hash', encode(e.prev_hash, 'hex'), 'hash', encode(e.hash, 'hex'),
         'event', e.data, 'position', e.position) ORDER BY e.version)::text
       FROM events e WHERE e.match_id = m.match_id),
    EXISTS (SELECT 1 FROM events e WHERE e.match_id = m.match_id
                                     AND e.type IN ('match_ended', 'match_annulled')),
    (SELECT json_object_agg(p.id, p.name)::text FROM players p
      WHERE p.id IN (SELECT jsonb_array_elements_text(c.data -> 'players'))),
    l.name, l.hide_hands_in_replay
FROM unnest(%(match_ids)s::text[]) WITH ORDINALITY AS m(match_id, n)
LEFT JOIN events c ON c.match_id = m.match_id AND c.version = 1
LEFT JOIN ladders l ON l.id = c.data ->> 'ladder_id'
ORDER BY m.n
"""
"""Matches' logs shaped as the record's events (``recorded_at`` exactly as
``format_recorded_at`` writes it, hashes in hex), whether each is finished,
its players' names and its ladder, one row per id in the order given: one
round trip for a whole batch, and one msgspec decode per match instead of a
Python loop over the rows (the archive job's largest cost after the views)."""

LogRow = tuple[str, str | None, bool, str | None, str | None, bool | None]
"""(match id, events JSON or None if no such match, finished, names JSON, ladder, hide)."""

_events_decoder = msgspec.json.Decoder(list[RecordedEvent])
_names_decoder = msgspec.json.Decoder(dict[str, str])


def load_logs(conn: psycopg.Connection, match_ids: Sequence[str]) -> list[LogRow]:
    """``LOGS_FOR_ARCHIVES``: one row per id, in order."""
    return conn.execute(LOGS_FOR_ARCHIVES, {"match_ids": list(match_ids)}).fetchall()


@contextmanager
def _collector_paused() -> Iterator[None]:
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


def build_of_log(row: LogRow) -> BuiltArchive | None:
    """The archive of one ``load_logs`` row; None while the match is being played.

    Raises NotFound for an id with no events.
    """
    match_id, log, finished, names, ladder_name, hide = row
    if log is None:
        raise NotFound(f"No match has the id {match_id}.")
    if not finished:
        return None
    events = _events_decoder.decode(log)
    record, states = record_of_events(
        match_id, events, names=_names_decoder.decode(names) if names else {},
        ladder_name=ladder_name, hide_hands_in_replay=bool(hide),
    )
    data, raw_size = pack_states(record, states)
    last = events[-1]
    return BuiltArchive(
        match_id=match_id,
        data=data,
        sha256=hashlib.sha256(data).digest(),
        raw_size=raw_size,
        events=len(events),
        final_hash=bytes.fromhex(last.hash),
        position=last.position or 0,
    )


def build_from_log(conn: psycopg.Connection, match_id: str) -> BuiltArchive | None:
    """The archive of a finished match from its log, or None while it is being played."""
    (row,) = load_logs(conn, [match_id])
    with _collector_paused():
        return build_of_log(row)


def build_batch(rows: Sequence[LogRow]) -> list[BuiltArchive]:
    """The archives of the finished matches among ``rows`` (others are skipped).

    Each archive is exactly ``build_of_log`` of its row: a batch only shares
    the query, the insert and the collector pause.
    """
    built: list[BuiltArchive] = []
    with _collector_paused():
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


STORE_ARCHIVES = """
INSERT INTO replay_archives (match_id, format, archive, sha256, raw_size, events, final_hash,
                             built_at_position)
SELECT a.* FROM unnest(%b::text[], %b::text[], %b::bytea[], %b::bytea[], %b::integer[],
                       %b::integer[], %b::bytea[], %b::bigint[]) a,
     -- this statement's own transaction only: see store_archives
     (SELECT set_config('synchronous_commit', 'off', true)) no_flush_wait
ON CONFLICT (match_id) DO UPDATE SET
    format = excluded.format, archive = excluded.archive, sha256 = excluded.sha256,
    raw_size = excluded.raw_size, events = excluded.events, final_hash = excluded.final_hash,
    built_at_position = excluded.built_at_position, built_at = now()
WHERE replay_archives.built_at_position < excluded.built_at_position
   OR replay_archives.sha256 <> excluded.sha256
"""


def store_archives(conn: psycopg.Connection, built: Sequence[BuiltArchive]) -> None:
    """Upsert, in one statement; an archive built from an older log never replaces a newer one.

    Committed without waiting for the WAL flush (``synchronous_commit`` off,
    set local to the statement's own transaction, so one round trip): an
    archive is a projection of the log, and one lost to a crash is rebuilt
    (on demand by the API, or by the catch-up). Needs an autocommit connection
    (``workers.db``); inside a caller's transaction the setting would last to its end.
    One row per match: of two archives of the same match, the last one given is stored.
    """
    latest = list({b.match_id: b for b in built}.values())
    if not latest:
        return
    conn.execute(
        STORE_ARCHIVES,
        ([b.match_id for b in latest], [ARCHIVE_FORMAT] * len(latest),
         [b.data for b in latest], [b.sha256 for b in latest],
         [b.raw_size for b in latest], [b.events for b in latest],
         [b.final_hash for b in latest], [b.position for b in latest]),
    )


def store_archive(conn: psycopg.Connection, built: BuiltArchive) -> None:
    """``store_archives`` of one archive."""
    store_archives(conn, [built])


RATINGS_OF_MATCH = """
SELECT h.player_id, h.before[k.i], h.after[k.i]
FROM events e
JOIN rating_histories h ON h.ladder_id = %s AND h.player_id = ANY(%s)
CROSS JOIN LATERAL (SELECT array_position(h.positions, e.position) AS i) k
WHERE e.match_id = %s AND e.type = 'match_ended' AND k.i IS NOT NULL
"""
"""(player, rating before, rating after) of a match's players, from the ratings projection."""


def add_ratings(headers: Headers, rows: Sequence[tuple[str, float, float]]) -> Headers:
    """The headers with the players' ratings before and after the match, where known."""
    known = {r[0]: (r[1], r[2]) for r in rows}
    if headers.annulled or not known:
        return headers
    players = tuple(
        msgspec.structs.replace(p, rating_before=known[p.id][0], rating_after=known[p.id][1])
        if p.id in known else p
        for p in headers.players
    )
    return msgspec.structs.replace(headers, players=(players[0], players[1]))


def record_with_ratings(conn: psycopg.Connection, record: MatchRecord) -> MatchRecord:
    h = record.headers
    if h.ladder_id is None:
        return record
    rows = conn.execute(
        RATINGS_OF_MATCH, (h.ladder_id, [p.id for p in h.players], h.match_id)
    ).fetchall()
    return msgspec.structs.replace(record, headers=add_ratings(h, rows))


def record_from_log(conn: psycopg.Connection, match_id: str) -> MatchRecord | None:
    """The match record (no frames) of a finished match, or None while it is played."""
    rows = load_rows(conn, match_id)
    if not rows or not any(r[2] in ("match_ended", "match_annulled") for r in rows):
        return None
    names, ladder_name, hide = _context(conn, rows[0][3])
    record, _ = build_record(
        match_id, rows, names=names, ladder_name=ladder_name, hide_hands_in_replay=hide
    )
    return record


def build_archive(match_id: str, *, database_url: str | None = None) -> dict[str, Any]:
    """The RQ job: (re)build and store the replay archive of a finished match."""
    conn = db.connection(database_url)
    built = build_from_log(conn, match_id)
    if built is None:
        return {"match_id": match_id, "built": False, "reason": "not finished"}
    store_archive(conn, built)
    return {"match_id": match_id, "built": True, "bytes": len(built.data),
            "events": built.events}


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
    return {"matches": len(ids), "built": len(built),
            "bytes": sum(len(b.data) for b in built),
            "events": sum(b.events for b in built)}


def drain_archives(
    prefix: str, *, slot: int = 0, database_url: str | None = None
) -> dict[str, Any]:
    """The RQ job behind ``workers.queue.request_archives``: build what is pending.

    Takes up to ``PENDING_BATCH`` ids at a time from the pending set (SPOP:
    an id asked for again meanwhile is in the set again, and built again)
    and builds them with ``build_archives``, until the set is empty. The
    drainer (slot 0) then gives back its key and looks once more, so an id
    added just before is never left waiting (its caller found the key taken);
    after ``DRAIN_FOR_S`` it hands over to a fresh job. While a full batch
    leaves another behind it, it queues a helper (slots 1 .. ``DRAINERS`` - 1)
    that drains beside it on another worker, and stops when the set is empty.
    Ids whose build raised go back to the set; ids taken by a job whose worker
    died do not: the catch-up finds the missing archives, and the API rebuilds
    a stale one when it is served.
    """
    from rq import get_current_job

    from workers import queue as q

    job = get_current_job()
    redis = job.connection if job is not None else q.redis_client()
    pending, drainer = q.pending_key(prefix), q.drainer_key(prefix, slot)
    started = time.monotonic()
    totals = {"matches": 0, "built": 0, "bytes": 0, "events": 0}
    try:
        while True:
            ids = redis.spop(pending, q.PENDING_BATCH)
            if ids:
                redis.set(drainer, "running", ex=q.REPLAYS_TIMEOUT_S)
                if slot == 0 and len(ids) == q.PENDING_BATCH:
                    _ask_for_a_helper(redis, prefix)
                try:
                    done = build_archives(
                        [i.decode() if isinstance(i, bytes) else str(i) for i in ids],
                        database_url=database_url,
                    )
                except BaseException:
                    # the database went away, the job timed out, ...: the ids go back
                    # for the job's retry or the next drainer (a bad log alone never
                    # raises here: build_batch skips it)
                    redis.sadd(pending, *ids)
                    raise
                for key in totals:
                    totals[key] += done[key]
                if time.monotonic() - started < q.DRAIN_FOR_S:
                    continue
            redis.delete(drainer)
            if slot != 0 or not redis.scard(pending) or not redis.set(
                drainer, "queued", nx=True, ex=q.REPLAYS_TIMEOUT_S
            ):
                break
            if ids:  # time to hand over
                q.enqueue_drain(redis=redis, prefix=prefix)
                break
    except BaseException:
        # never leave the key taken by a job that stopped: the next request queues a drainer
        redis.delete(drainer)
        raise
    return totals


def _ask_for_a_helper(redis: Any, prefix: str) -> None:
    """Queue one more drain job in the first free helper slot, if a backlog is left."""
    from workers import queue as q

    if redis.scard(q.pending_key(prefix)) < q.PENDING_BATCH:
        return
    for slot in range(1, q.DRAINERS):
        if redis.set(q.drainer_key(prefix, slot), "queued", nx=True, ex=q.REPLAYS_TIMEOUT_S):
            q.enqueue_drain(redis=redis, prefix=prefix, slot=slot)
            return


# -- checking an imported record -----------------------------------------------------------


class RecordCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on an imported record, and its frames when it holds up."""

    ok: bool
    chain: str
    refold: str
    fairness: str
    problems: list[str]
    headers: Headers | None = None
    frames: list[Frame] = []


def check_record(record: MatchRecord) -> RecordCheck:
    """Verify a record on its own: chain hashes, re-fold through the engine, deals vs seed.

    The checks are the audit's (``service.audit.audit.build_report``), run on
    the record's rows instead of the database's, plus: each event's hash is
    recomputed from the record's own fields, and the headers must agree
    with the events.
    """
    from service.audit.audit import build_report
    from service.audit.rows import RawRow

    problems: list[str] = []
    events = record.events
    if not events:
        return RecordCheck(ok=False, chain="fail", refold="fail", fairness="fail",
                           problems=["the record has no events"])
    match_id = record.headers.match_id
    rows: list[RawRow] = []
    prev = GENESIS_HASH
    for i, e in enumerate(events, start=1):
        try:
            at = datetime.fromisoformat(e.recorded_at).astimezone(UTC)
            prev_hash, hash_ = bytes.fromhex(e.prev_hash), bytes.fromhex(e.hash)
        except ValueError as exc:
            raise ValidationFailed(f"event {e.version}: {exc}") from exc
        if e.version != i:
            problems.append(f"event {i} is numbered {e.version}")
        if prev_hash != prev:
            problems.append(f"event {e.version}: prev_hash is not the previous event's hash")
        expected = row_hash(prev, match_id=match_id, version=e.version, actor=e.actor,
                            recorded_at=at, event_bytes=encode_event(e.event))
        if expected != hash_:
            problems.append(f"event {e.version}: hash does not match its content")
        prev = hash_
        rows.append(RawRow(
            position=e.position or i, match_id=match_id, version=e.version, type=_tag(e.event),
            data=msgspec.json.decode(encode_event(e.event)), actor=e.actor, recorded_at=at,
            prev_hash=prev_hash, hash=hash_,
        ))
    report = build_report(match_id, rows)
    for name, check in (("chain", report.chain), ("refold", report.refold),
                        ("fairness", report.fairness)):
        if check.status == "inconsistent":
            detail = getattr(check, "first_break", None) or getattr(
                check, "first_difference", None) or getattr(check, "first_bad_deal", None)
            problems.append(f"{name}: {detail.problem if detail else 'failed'}")

    try:
        rebuilt, states = build_record(
            match_id,
            [(e.position or e.version, e.version, _tag(e.event), e.event, e.actor,
              datetime.fromisoformat(e.recorded_at), bytes.fromhex(e.prev_hash),
              bytes.fromhex(e.hash)) for e in events],
            names={p.id: p.name for p in record.headers.players if p.name},
            ladder_name=record.headers.ladder,
            hide_hands_in_replay=record.headers.hide_hands_in_replay,
        )
    except Exception as exc:  # a forged log can break the fold anywhere: report, never 500
        problems.append(f"the events do not fold into a match: {type(exc).__name__}: {exc}")
        return RecordCheck(ok=False, chain=report.chain.status, refold=report.refold.status,
                           fairness=report.fairness.status, problems=problems,
                           headers=record.headers)
    mine = msgspec.structs.replace(
        record.headers,
        players=tuple(msgspec.structs.replace(p, rating_before=None, rating_after=None)
                      for p in record.headers.players),
    )
    if mine != rebuilt.headers:
        diffs = [f for f in Headers.__struct_fields__
                 if getattr(mine, f) != getattr(rebuilt.headers, f)]
        problems.append("headers disagree with the events: " + ", ".join(diffs))
    ok = not problems
    return RecordCheck(
        ok=ok,
        chain=report.chain.status,
        refold=report.refold.status,
        fairness=report.fairness.status,
        problems=problems,
        headers=record.headers,
        frames=build_frames(rebuilt, states) if ok else [],
    )


def redacted_event(record: MatchRecord, version: int, viewer: Any) -> EventView:
    """Event ``version`` of a finished match as ``viewer`` may see it in the replay."""
    event = record.events[version - 1].event
    return redact(event, viewer, match_over=True,
                  hide_hands_in_replay=record.headers.hide_hands_in_replay)
