"""The match_summaries projection: rebuilt from the events table it equals
what the commands maintained incrementally, and it never moves backwards."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest
from api_harness import Api, play_out

from schemas.events import decode_event
from service.matches.summaries import rebuild_match_summaries, save_summary, summarise

pytestmark = pytest.mark.anyio

_COLUMNS = (
    "match_id, ladder_id, ruleset, player0, player1, status, hand, tokens, winner,"
    " end_reason, last_version"
)


async def _rows(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
    cur = await conn.execute(f"SELECT {_COLUMNS} FROM match_summaries ORDER BY match_id")
    return await cur.fetchall()


async def test_a_rebuild_equals_the_incremental_projection(api: Api, database_url: str) -> None:
    finished, a, b = await api.new_match("duel")
    await play_out(api, finished, (a, b), random.Random(3))
    resigned, c, _d = await api.new_match()
    assert (
        await api.client.post(f"/api/matches/{resigned}/resign", json={}, headers=c.auth)
    ).status_code == 200
    live, e, f = await api.new_match()
    view = await api.view(live, e)
    mover = (e, f)[view["to_move"]]
    assert (
        await api.client.post(f"/api/matches/{live}/pass", json={}, headers=mover.auth)
    ).status_code == 200

    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        incremental = await _rows(conn)
        assert {r[5] for r in incremental} == {"finished", "live"}
        assert len(incremental) == 3
        assert await rebuild_match_summaries(conn) == 3
        assert await _rows(conn) == incremental


async def test_an_older_summary_never_overwrites_a_newer_one(api: Api, database_url: str) -> None:
    match_id, a, b = await api.new_match("duel")
    await play_out(api, match_id, (a, b), random.Random(4))
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        before = await _rows(conn)
        cur = await conn.execute(
            "SELECT data::text FROM events WHERE match_id = %s ORDER BY version", (match_id,)
        )
        events = [decode_event(r[0]) for r in await cur.fetchall()]
        await save_summary(conn, summarise(events[:3]))  # a late, stale writer
        assert await _rows(conn) == before
        assert before[0][5] == "finished"
        assert before[0][10] == len(events)
