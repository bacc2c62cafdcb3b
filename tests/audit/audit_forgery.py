"""What a forger does to a finished match, and what the audit finds: shared by
the audit tests (a module of its own: ``from conftest import`` breaks when pytest
collects another test folder's conftest first)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgspec
from audit_matches import Batch, play
from psycopg import AsyncConnection

from schemas.events import Event, encode_event
from schemas.rules import STANDARD
from service.audit import AuditReport
from service.store.chain import GENESIS_HASH, row_hash
from service.store.events import EventStore, event_type


def good_match(match_id: str, predicate: Callable[[list[Batch]], bool]) -> tuple[str, list[Batch]]:
    """The first seeded random standard match that satisfies ``predicate`` (deterministic)."""
    for n in range(500):
        seed, batches = play(random.Random(n), match_id=match_id, ruleset=STANDARD)
        if predicate(batches):
            return seed, batches
    raise AssertionError("no seeded match has the wanted shape")


def rich(batches: list[Batch]) -> bool:
    """Two hands or more, a token won, a card answered by the other seat's card."""
    events = [e for _, es in batches for e in es]
    types = [type(e).__name__ for e in events]
    answered = any(
        types[i] == types[i + 1] == "CardPlayed" and events[i].seat != events[i + 1].seat  # type: ignore[attr-defined]
        for i in range(len(events) - 1)
    )
    return types.count("HandDealt") >= 2 and "CardsKept" in types and answered


async def append_batches(store: EventStore, match_id: str, seed: str, batches: list[Batch]) -> int:
    """Append as the service does: one append per command, the seed with the first."""
    version = 0
    for i, (actor, events) in enumerate(batches):
        result = await store.append(
            match_id, version, events, actor=actor, seed=seed if i == 0 else None
        )
        version = result.last_version
    return version


class Forger:
    """A superuser with the triggers off: everything an insider could do to the table."""

    def __init__(self, url: str, match_id: str) -> None:
        self.url = url
        self.match_id = match_id

    async def _conn(self) -> AsyncConnection[Any]:
        conn = await AsyncConnection.connect(self.url, autocommit=True)
        # Triggers (the append-only guard) do not fire for a replica session.
        await conn.execute("SET session_replication_role = replica")
        return conn

    async def rows(self) -> list[dict[str, Any]]:
        async with await self._conn() as conn:
            cur = await conn.execute(
                "SELECT position, version, type, data, actor FROM events"
                " WHERE match_id = %s ORDER BY version",
                (self.match_id,),
            )
            names = [d.name for d in cur.description or []]
            return [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]

    async def data(self, version: int) -> dict[str, Any]:
        return next(r["data"] for r in await self.rows() if r["version"] == version)

    async def set_data(self, version: int, data: dict[str, Any]) -> None:
        async with await self._conn() as conn:
            await conn.execute(
                "UPDATE events SET data = %s::jsonb, type = %s"
                " WHERE match_id = %s AND version = %s",
                (msgspec.json.encode(data).decode(), data["type"], self.match_id, version),
            )

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        async with await self._conn() as conn:
            await conn.execute(sql, params)

    async def delete(self, version: int, *, close_gap: bool = False) -> None:
        """Delete one row; ``close_gap``: every later version moves down by one (in
        two statements: the unique key on (match_id, version) is checked row by row,
        so a single ``version - 1`` collides whenever the heap is not in version order)."""
        await self.execute(
            "DELETE FROM events WHERE match_id = %s AND version = %s", (self.match_id, version)
        )
        if close_gap:
            await self.execute(
                "UPDATE events SET version = version + 1000000"
                " WHERE match_id = %s AND version > %s",
                (self.match_id, version),
            )
            await self.execute(
                "UPDATE events SET version = version - 1000001"
                " WHERE match_id = %s AND version > 1000000",
                (self.match_id,),
            )

    async def insert(self, version: int, event: Event, actor: str) -> None:
        """A new row (placeholder hashes: ``rechain`` or the test sets them)."""
        await self.execute(
            "INSERT INTO events (match_id, version, type, data, actor, recorded_at,"
            " prev_hash, hash) VALUES (%s, %s, %s, %s::jsonb, %s, now(), %s, %s)",
            (
                self.match_id,
                version,
                event_type(event),
                encode_event(event).decode(),
                actor,
                GENESIS_HASH,
                GENESIS_HASH,
            ),
        )

    async def rechain(self) -> None:
        """Recompute every hash of the match, as a forger who read docs/event-store.md."""
        from schemas.events import decode_event

        async with await self._conn() as conn:
            cur = await conn.execute(
                "SELECT position, version, data::text, actor, recorded_at FROM events"
                " WHERE match_id = %s ORDER BY version",
                (self.match_id,),
            )
            prev = GENESIS_HASH
            for position, version, data, actor, recorded_at in await cur.fetchall():
                h = row_hash(
                    prev,
                    match_id=self.match_id,
                    version=version,
                    actor=actor,
                    recorded_at=recorded_at,
                    event_bytes=encode_event(decode_event(data)),
                )
                await conn.execute(
                    "UPDATE events SET prev_hash = %s, hash = %s WHERE position = %s",
                    (prev, h, position),
                )
                prev = h


def findings(report: AuditReport) -> dict[str, int | None]:
    """Which checks failed, and at which version: what each tampering test pins down."""
    out: dict[str, int | None] = {}
    if report.chain.first_break is not None:
        out["chain"] = report.chain.first_break.version
    if report.refold.first_difference is not None:
        out["refold"] = report.refold.first_difference.version
    if report.fairness.first_bad_deal is not None:
        out["fairness"] = report.fairness.first_bad_deal.version
    if report.admin.first_problem is not None:
        out["admin"] = report.admin.first_problem.version
    return out
