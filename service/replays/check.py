"""Checking an imported match record on its own, and the replay's redacted events.

``check_record`` verifies a record with the audit's pure checks (chain hashes,
a re-fold through the engine, the deals against the seed) plus the record's
own consistency (each hash recomputed from its fields, the headers against
the events); ``POST /api/records/check`` answers with it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from schemas.events import encode_event
from schemas.views import EventView
from service.audit.audit import build_report
from service.audit.rows import RawRow
from service.engine import redact
from service.errors import ValidationFailed
from service.replays.frames import ReplayFrame, build_frames
from service.replays.record import Headers, MatchRecord, build_record, tag_of
from service.store.chain import GENESIS_HASH, row_hash


class RecordCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on an imported record, and its frames when it holds up."""

    ok: bool
    chain: str
    refold: str
    fairness: str
    problems: list[str]
    headers: Headers | None = None
    frames: list[ReplayFrame] = []


def check_record(record: MatchRecord) -> RecordCheck:
    """Verify a record on its own: chain hashes, re-fold through the engine, deals vs seed.

    The checks are the audit's (``service.audit.audit.build_report``), run on
    the record's rows instead of the database's, plus: each event's hash is
    recomputed from the record's own fields, and the headers must agree
    with the events.
    """

    problems: list[str] = []
    events = record.events
    if not events:
        return RecordCheck(
            ok=False,
            chain="fail",
            refold="fail",
            fairness="fail",
            problems=["the record has no events"],
        )
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
        expected = row_hash(
            prev,
            match_id=match_id,
            version=e.version,
            actor=e.actor,
            recorded_at=at,
            event_bytes=encode_event(e.event),
        )
        if expected != hash_:
            problems.append(f"event {e.version}: hash does not match its content")
        prev = hash_
        rows.append(
            RawRow(
                position=e.position or i,
                match_id=match_id,
                version=e.version,
                type=tag_of(e.event),
                data=msgspec.json.decode(encode_event(e.event)),
                actor=e.actor,
                recorded_at=at,
                prev_hash=prev_hash,
                hash=hash_,
            )
        )
    report = build_report(match_id, rows)
    for name, check in (
        ("chain", report.chain),
        ("refold", report.refold),
        ("fairness", report.fairness),
    ):
        if check.status == "inconsistent":
            detail = (
                getattr(check, "first_break", None)
                or getattr(check, "first_difference", None)
                or getattr(check, "first_bad_deal", None)
            )
            problems.append(f"{name}: {detail.problem if detail else 'failed'}")

    try:
        rebuilt, states = build_record(
            match_id,
            [
                (
                    e.position or e.version,
                    e.version,
                    tag_of(e.event),
                    e.event,
                    e.actor,
                    datetime.fromisoformat(e.recorded_at),
                    bytes.fromhex(e.prev_hash),
                    bytes.fromhex(e.hash),
                )
                for e in events
            ],
            names={p.id: p.name for p in record.headers.players if p.name},
            ladder_name=record.headers.ladder,
            hide_hands_in_replay=record.headers.hide_hands_in_replay,
        )
    except Exception:  # a forged log can break the fold anywhere: report, never 500
        # Said in the game's words: the Python error (tuple.index ...) tells a reader nothing.
        problems.append(
            "the events do not fold into a match: an event is impossible where it stands"
            + (
                " (the re-fold above names the first)"
                if report.refold.status == "inconsistent"
                else ""
            )
        )
        return RecordCheck(
            ok=False,
            chain=report.chain.status,
            refold=report.refold.status,
            fairness=report.fairness.status,
            problems=problems,
            headers=record.headers,
        )
    mine = msgspec.structs.replace(
        record.headers,
        players=tuple(
            msgspec.structs.replace(p, rating_before=None, rating_after=None)
            for p in record.headers.players
        ),
    )
    if mine != rebuilt.headers:
        diffs = [
            f for f in Headers.__struct_fields__ if getattr(mine, f) != getattr(rebuilt.headers, f)
        ]
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
    return redact(
        event, viewer, match_over=True, hide_hands_in_replay=record.headers.hide_hands_in_replay
    )
