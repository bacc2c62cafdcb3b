"""Helpers for the workers' tests: write finished matches straight into the
event store, Elo by hand, and read the ratings tables back."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import psycopg

from schemas.events import MatchAnnulled, MatchCreated, MatchEnded
from schemas.rules import DUEL, STANDARD
from service.store import EventStore


def new_ladder(
    conn: psycopg.Connection,
    rating: dict[str, Any] | None = None,
    *,
    ruleset: str = "standard",
    hide_hands_in_replay: bool = False,
) -> str:
    organiser = f"org-{uuid.uuid4().hex[:8]}"
    conn.execute(
        "INSERT INTO players (id, name, roles, token_hash) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING",
        (organiser, organiser, ["organiser"], hashlib.sha256(organiser.encode()).digest()),
    )
    ladder_id = f"lad-{uuid.uuid4().hex[:8]}"
    conn.execute(
        "INSERT INTO ladders (id, name, ruleset, rating, hide_hands_in_replay, created_by)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (ladder_id, ladder_id, ruleset, json.dumps(rating or {}), hide_hands_in_replay, organiser),
    )
    return ladder_id


async def finish_match(
    store: EventStore, ladder_id: str | None, p0: str, p1: str, winner: int | None
) -> str:
    """A match that was created and ended at once (the ratings read only these two
    events): seat 0 is ``p0``. ``winner`` None is a draw."""
    match_id = f"m-{uuid.uuid4().hex[:12]}"
    seed = hashlib.sha256(match_id.encode()).hexdigest()
    created = MatchCreated(
        match_id=match_id,
        players=(p0, p1),
        ruleset=DUEL if winner is None else STANDARD,
        first_dealer=0,
        seed_commitment=hashlib.sha256(bytes.fromhex(seed)).hexdigest(),
        ladder_id=ladder_id,
    )
    await store.append(match_id, 0, [created], actor="system")
    reason = "hand_limit" if winner is None else "resigned"
    await store.append(
        match_id, 1, [MatchEnded(winner=winner, reason=reason, seed=seed)], actor="system"
    )
    return match_id


async def annul(store: EventStore, match_id: str) -> None:
    version = await store.version(match_id)
    await store.append(
        match_id, version, [MatchAnnulled(admin="admin", reason="test")], actor="admin"
    )


def hand_elo(
    ratings: dict[str, float],
    games: dict[str, int],
    reached: set[str],
    a: str,
    b: str,
    score_a: float,
    *,
    initial: float = 1500.0,
    k_new: float = 40,
    k: float = 20,
    k_master: float = 10,
    new_games: int = 30,
    master: float = 2400,
) -> None:
    """One rated game, written out from the federation rules (independently of workers.elo)."""
    ra, rb = ratings.get(a, initial), ratings.get(b, initial)

    def expected(mine: float, theirs: float) -> float:
        diff = max(-400.0, min(400.0, mine - theirs))
        return 1 / (1 + 10 ** (-diff / 400))

    def kf(p: str) -> float:
        if games.get(p, 0) < new_games:
            return k_new
        return k_master if p in reached else k

    new_a = ra + kf(a) * (score_a - expected(ra, rb))
    new_b = rb + kf(b) * ((1 - score_a) - expected(rb, ra))
    ratings[a], ratings[b] = new_a, new_b
    for p, r in ((a, new_a), (b, new_b)):
        games[p] = games.get(p, 0) + 1
        if r >= master:
            reached.add(p)


def table(conn: psycopg.Connection, ladder_id: str) -> dict[str, tuple[Any, ...]]:
    return {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT player_id, rating, games, wins, draws, losses, peak, reached_master,"
            " provisional, timeouts FROM ratings WHERE ladder_id = %s",
            (ladder_id,),
        ).fetchall()
    }


def histories(conn: psycopg.Connection, ladder_id: str) -> dict[str, tuple[Any, ...]]:
    return {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT player_id, positions, before, after, scores FROM rating_histories"
            " WHERE ladder_id = %s",
            (ladder_id,),
        ).fetchall()
    }


def insert_result(
    conn: psycopg.Connection,
    ladder_id: str,
    p0: str,
    p1: str,
    winner: int | None,
    at: Any,
    *,
    reason: str | None = None,
) -> str:
    """A finished match written straight into the events table with its end at
    ``at`` (a datetime): what the ratings read, rating periods included. The
    hashes are placeholders (the ratings never check the chain)."""
    match_id = f"m-{uuid.uuid4().hex[:12]}"
    created = MatchCreated(
        match_id=match_id,
        players=(p0, p1),
        ruleset=STANDARD,
        first_dealer=0,
        seed_commitment="0" * 64,
        ladder_id=ladder_id,
    )
    ended = MatchEnded(
        winner=winner,
        seed="0" * 64,
        reason=reason or ("hand_limit" if winner is None else "resigned"),
    )  # type: ignore[arg-type]
    from schemas.events import encode_event

    for version, event in ((1, created), (2, ended)):
        conn.execute(
            "INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash,"
            " hash) VALUES (%s, %s, %s, %s, 'system', %s, %s, %s)",
            (
                match_id,
                version,
                type(event).__struct_config__.tag,
                encode_event(event).decode(),
                at,
                bytes(32),
                bytes(32),
            ),
        )
    return match_id


def played_log(
    seed: int,
    match_id: str,
    *,
    ladder_id: str | None = None,
    players: tuple[str, str] = ("p0", "p1"),
) -> list[Any]:
    """A whole match two bots played through the engine (its log, ending in match_ended)."""
    import random

    from msgspec.structs import replace

    from service.bots import heuristic_bot, random_bot
    from service.engine.selfplay import play_match

    rng = random.Random(seed)
    _, log = play_match(
        (random_bot, heuristic_bot), STANDARD if seed % 2 else DUEL, rng, match_id=match_id
    )
    log[0] = replace(log[0], players=players, ladder_id=ladder_id)
    return log


async def store_log(
    store: EventStore,
    match_id: str,
    log: list[Any],
    *,
    after: int = 0,
    upto: int | None = None,
    step: int = 8,
) -> int:
    """Append ``log[after:upto]`` in appends of ``step`` events; the version reached."""
    end = len(log) if upto is None else upto
    version = after
    while version < end:
        chunk = log[version : min(end, version + step)]
        await store.append(match_id, version, chunk, actor="system")
        version += len(chunk)
    return version
