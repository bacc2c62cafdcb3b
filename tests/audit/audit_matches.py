"""Matches for the audit tests: random bots played through the engine.

``play`` returns the match as batches, one per command, each with its actor
(the seat's player, or ``system`` for the start) and the events ``decide``
emitted, which is exactly what the service appends. ``chain_rows`` turns
batches into the rows the store would write (same hash chain), for the pure
tests; the database tests append the batches through ``EventStore``.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.commands import KeepCards, Resign, SeatCommand, StartMatch
from schemas.events import Event, encode_event
from schemas.rules import DUEL, STANDARD, Ruleset
from service.audit.rows import RawRow
from service.engine import decide, evolve, initial_state, is_terminal, legal_moves
from service.store.chain import GENESIS_HASH, row_hash
from service.store.events import event_type

Batch = tuple[str, list[Event]]


def bot_move(state: Any, seat: int, rng: random.Random) -> SeatCommand | None:
    moves = legal_moves(state, seat)  # type: ignore[arg-type]
    if not moves:
        return None
    move = rng.choice(moves)
    if isinstance(move, KeepCards):
        hand = state.hands[seat]
        return KeepCards(seat=move.seat, cards=tuple(c for c in hand if rng.random() < 0.5))
    return move


def play(
    rng: random.Random,
    *,
    match_id: str = "m1",
    players: tuple[str, str] = ("alice", "bob"),
    ruleset: Ruleset | None = None,
    ladder_id: str | None = None,
    resign_chance: float = 0.0,
    stop_after: int | None = None,
) -> tuple[str, list[Batch]]:
    """Play one match; return its seed and its batches (``stop_after``: live, that many moves)."""
    seed = rng.randbytes(32).hex()
    start = StartMatch(
        match_id=match_id,
        players=players,
        ruleset=ruleset or rng.choice([STANDARD, DUEL]),
        first_dealer=rng.choice([0, 1]),
        seed=seed,
        ladder_id=ladder_id,
    )
    state = initial_state(seed)
    batches: list[Batch] = []

    def run(actor: str, command: Any) -> None:
        nonlocal state
        events = decide(state, command)
        for e in events:
            state = evolve(state, e)
        batches.append((actor, events))

    run("system", start)
    moves = 0
    while not is_terminal(state):
        if stop_after is not None and moves >= stop_after:
            break
        seats = [s for s in (0, 1) if legal_moves(state, s)]  # type: ignore[arg-type]
        seat = rng.choice(seats)
        if rng.random() < resign_chance:
            run(players[seat], Resign(seat=seat))  # type: ignore[arg-type]
            break
        command = bot_move(state, seat, rng)
        assert command is not None
        run(players[seat], command)
        moves += 1
    return seed, batches


def events_of(batches: list[Batch]) -> list[Event]:
    return [e for _, events in batches for e in events]


def chain_rows(
    match_id: str,
    batches: list[Batch],
    *,
    start: datetime | None = None,
    step: timedelta = timedelta(seconds=2),
) -> list[RawRow]:
    """The rows the store would write for these batches (one instant per batch)."""
    import msgspec

    at = start or datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    prev = GENESIS_HASH
    rows: list[RawRow] = []
    version = 0
    for actor, events in batches:
        at += step
        for event in events:
            version += 1
            raw = encode_event(event)
            h = row_hash(
                prev,
                match_id=match_id,
                version=version,
                actor=actor,
                recorded_at=at,
                event_bytes=raw,
            )
            rows.append(
                RawRow(
                    position=version,
                    match_id=match_id,
                    version=version,
                    type=event_type(event),
                    data=msgspec.json.decode(raw),
                    actor=actor,
                    recorded_at=at,
                    prev_hash=prev,
                    hash=h,
                )
            )
            prev = h
    return rows


def rechain(rows: list[RawRow]) -> list[RawRow]:
    """The rows with every hash recomputed: what a forger who knows the scheme writes."""
    import msgspec

    out: list[RawRow] = []
    prev = GENESIS_HASH
    for row in rows:
        h = row_hash(
            prev,
            match_id=row.match_id,
            version=row.version,
            actor=row.actor or "",
            recorded_at=row.recorded_at,
            event_bytes=encode_event(
                msgspec.convert(row.data, type=Event)  # type: ignore[arg-type]
            ),
        )
        out.append(msgspec.structs.replace(row, prev_hash=prev, hash=h))
        prev = h
    return out
