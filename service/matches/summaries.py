"""The ``match_summaries`` projection: one row per match for the match lists.

Built from events alone (never from a hand or a face-down card: only who
plays, the hand number, tokens given, the result). Each row records the last
version it applied, and an update only ever moves it forward, so applying the
same events twice, or out of order, is harmless. ``rebuild_match_summaries``
recomputes every row from the events table and must give the same rows as the
incremental updates (tests/api/test_summaries.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec
from psycopg import AsyncClientCursor, AsyncConnection
from psycopg.types.json import Jsonb

from schemas.cards import TOKEN_KINDS, Seat
from schemas.events import (
    Event,
    HandDealt,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
    RoundRevealed,
)
from service.store import matchlog
from service.store.ops import run_async

Status = Literal["live", "finished", "annulled"]


def _no_tokens() -> dict[str, int]:
    return {kind: 0 for kind in TOKEN_KINDS}


class Summary(msgspec.Struct, kw_only=True):
    match_id: str
    ladder_id: str | None
    ruleset: str
    players: tuple[str, str]
    status: Status = "live"
    hand: int = 0
    tokens: tuple[dict[str, int], dict[str, int]] = msgspec.field(
        default_factory=lambda: (_no_tokens(), _no_tokens())
    )
    winner: Seat | None = None
    end_reason: str | None = None
    last_version: int = 0


def summarise(events: Iterable[Event], first_version: int = 1) -> Summary:
    """The summary of a whole log (``events`` starts with ``match_created``)."""
    summary: Summary | None = None
    version = first_version - 1
    for event in events:
        version += 1
        if summary is None:
            if not isinstance(event, MatchCreated):
                raise ValueError("a match log starts with match_created")
            summary = Summary(
                match_id=event.match_id,
                ladder_id=event.ladder_id,
                ruleset=event.ruleset.name,
                players=event.players,
            )
        else:
            tally(summary, event)
        summary.last_version = version
    if summary is None:
        raise ValueError("an empty log has no summary")
    return summary


def tally(summary: Summary, event: Event) -> None:
    match event:
        case HandDealt(hand=hand):
            summary.hand = hand
        case RoundRevealed(outcomes=outcomes):
            for outcome in outcomes:
                for award in outcome.given:
                    summary.tokens[award.seat][award.kind] += 1
        case MatchEnded(winner=winner, reason=reason):
            summary.status = "finished"
            summary.winner = winner
            summary.end_reason = reason
        case MatchAnnulled():
            summary.status = "annulled"
            summary.winner = None
            summary.end_reason = "annulled"
        case _:
            pass


_UPSERT = """
INSERT INTO match_summaries AS s (match_id, ladder_id, ruleset, player0, player1, status, hand,
                                  tokens, winner, end_reason, last_version)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (match_id) DO UPDATE
   SET status = EXCLUDED.status, hand = EXCLUDED.hand, tokens = EXCLUDED.tokens,
       winner = EXCLUDED.winner, end_reason = EXCLUDED.end_reason,
       last_version = EXCLUDED.last_version, updated_at = now()
 WHERE s.last_version < EXCLUDED.last_version
"""


_ASYNC_COMMIT_UPSERT = "BEGIN; SET LOCAL synchronous_commit TO off;" + _UPSERT + "; COMMIT"


_json = msgspec.json.Encoder()


def _tokens_json(tokens: object) -> bytes:
    # msgspec, not the stdlib json psycopg uses by default: ~1% of the API's
    # CPU per command went to dumping this small list.
    return _json.encode(tokens)


def _params(s: Summary) -> tuple[object, ...]:
    return (
        s.match_id,
        s.ladder_id,
        s.ruleset,
        s.players[0],
        s.players[1],
        s.status,
        s.hand,
        Jsonb(list(s.tokens), dumps=_tokens_json),
        s.winner,
        s.end_reason,
        s.last_version,
    )


def upsert_statement(summary: Summary) -> tuple[str, tuple[object, ...]]:
    """``(sql, params)`` of the upsert, for ``EventStore.append(also=...)``: the
    summary then commits in the same transaction as the events it follows."""
    return _UPSERT, _params(summary)


async def save_summary(conn: AsyncConnection, summary: Summary, *, durable: bool = True) -> None:
    """Upsert one row; an older summary never overwrites a newer one.

    ``durable=False`` (``conn`` in autocommit): one round trip, a transaction
    whose COMMIT does not wait for the WAL flush (``synchronous_commit off``).
    The statements go as one simple query, so the parameters are bound on the
    client (``AsyncClientCursor``).
    """
    if durable:
        await conn.execute(_UPSERT, _params(summary))
        return
    try:
        async with AsyncClientCursor(conn) as cur:
            await cur.execute(_ASYNC_COMMIT_UPSERT, _params(summary))
    except BaseException:
        await conn.rollback()  # leave no aborted transaction on a pooled connection
        raise


async def rebuild_match_summaries(conn: AsyncConnection) -> int:
    """Recompute every summary from the events table; return how many rows.

    Runs in one transaction, so a reader sees either the old rows or the new.
    """
    async with conn.transaction():
        logs = await run_async(conn, matchlog.every_log())
        await conn.execute("DELETE FROM match_summaries")
        for events in logs.values():
            await save_summary(conn, summarise(events))
    return len(logs)


_BEHIND = f"""SELECT h.match_id FROM {matchlog.HEADS} h
LEFT JOIN match_summaries s ON s.match_id = h.match_id
WHERE s.last_version IS DISTINCT FROM h.version"""


async def catch_up_match_summaries(conn: AsyncConnection) -> int:
    """Recompute the summaries that are missing or behind their match's events
    (after a crash lost an unflushed summary update); return how many."""
    cur = await conn.execute(_BEHIND)
    behind = [row[0] for row in await cur.fetchall()]
    for match_id in behind:
        rows = await run_async(conn, matchlog.rows_of_match(match_id))
        await save_summary(conn, summarise([r.event for r in rows]))
    return len(behind)
