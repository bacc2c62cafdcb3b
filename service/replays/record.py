"""The match record (``matcha-record/1``): a finished match as a portable file.

What a chess PGN is to a game: headers (ladder, players, ruleset, dates,
result and how it ended, seed, final chain hash) and every event with what
its hash covers (version, actor, time, the previous hash), so anyone can
re-check the chain, re-fold the events through the engine and re-deal from
the seed. docs/replays.md documents the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import msgspec

from schemas.events import Event, MatchCreated, MatchEnded
from schemas.rules import Ruleset
from service.engine import initial_state
from service.engine.evolve import apply
from service.engine.state import State, freeze, thaw
from service.errors import NotFound, ValidationFailed
from service.evidence.checkpoints import InclusionProof
from service.evidence.keys import PublicKey
from service.evidence.receipts import Receipt
from service.store.chain import format_recorded_at

FORMAT: Literal["matcha-record/1"] = "matcha-record/1"

ResultTag = Literal["1-0", "0-1", "1/2-1/2", "annulled", "*"]


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
    result: ResultTag
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
    # Added when exported (service/audit/record_evidence.py), never stored in an archive:
    receipt: Receipt | None = None
    """The service's signature of the last event's head: with the chain, of every event."""
    keys: list[PublicKey] = []
    """The service's public keys (pin your own copy from ``GET /api/keys``)."""
    checkpoint: InclusionProof | None = None
    """The match's leaf in the latest signed checkpoint, and its inclusion proof."""
    problems: list[str] = []
    """What the audit found wrong with the log (empty: it holds up)."""


LogRows = Sequence[tuple[int, int, str, Event, str, datetime, bytes, bytes]]
"""(position, version, type, event, actor, recorded_at, prev_hash, hash) in version order."""

_encoder = msgspec.json.Encoder()
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


_TAGS: dict[type, str] = {}


def tag_of(event: Event) -> str:
    """The event's ``type`` (its msgspec tag), looked up once per class."""
    kind = type(event)
    tag = _TAGS.get(kind)
    if tag is None:
        tag = _TAGS[kind] = str(kind.__struct_config__.tag)
    return tag


def _result(state: State) -> ResultTag:
    if state.annulled:
        return "annulled"
    if not state.ended:
        return "*"
    if state.winner is None:
        return "1/2-1/2"
    return "1-0" if state.winner == 0 else "0-1"


def build_record(
    match_id: str,
    rows: LogRows,
    *,
    names: dict[str, str],
    ladder_name: str | None,
    hide_hands_in_replay: bool,
) -> tuple[MatchRecord, list[State]]:
    """The record of a match and the state after each event (``rows``: ``LogRows``)."""
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
        match_id,
        events,
        names=names,
        ladder_name=ladder_name,
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
        # With its instant, so a timed match's states carry its clocks (replays
        # show them at every frame, measured at that frame's event).
        apply(table, e.event, datetime.fromisoformat(e.recorded_at))
        states.append(freeze(table))
    state = states[-1]
    created = events[0].event
    if not isinstance(created, MatchCreated):
        raise ValidationFailed(f"match {match_id} does not start with match_created")
    ended_at = next((e.recorded_at for e in events if isinstance(e.event, MatchEnded)), None)
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
