"""The fair-play projection (docs/fairplay.md): flags computed from the log by the
worker's runner equal a fresh recompute, before and after a rebuild; planted
win-trading is flagged, an honest ladder is not."""

from __future__ import annotations

import itertools
import random
import threading

import psycopg
import pytest
from workers_harness import finish_match, new_ladder, played_log, store_log

from schemas.events import CardPlayed, Passed
from schemas.fairplay import DEFAULT_FAIRPLAY
from service.fairplay import ladder
from service.fairplay.games import columns_of_log, games_of
from service.fairplay.signals import flags_of_columns, flags_of_ladder
from service.ratings.elo import EloSettings
from service.store import EventStore, matchlog
from service.store.ops import run
from workers.projections import FlagsProjection, Runner
from workers.projections.flags import rebuild

pytestmark = pytest.mark.anyio

ELO = EloSettings()
TIMED_FROM = ("card_played", "passed", "round_revealed", "cards_kept")
"""A move is timed from the event of these before it (a match's first move is not)."""


def catch_up(database_url: str) -> int:
    runner = Runner(FlagsProjection(), database_url, stop=threading.Event(), sweep_at_start=False)
    try:
        return runner.catch_up()
    finally:
        runner.close()


async def plant(store: EventStore, ladder_id: str, rng: random.Random) -> None:
    """Eight honest players in random pairs, and ``feeder`` resigning to ``fed`` 16 times."""
    honest = [f"h{i}" for i in range(8)]
    for _ in range(60):
        a, b = rng.sample(honest, 2)
        await finish_match(store, ladder_id, a, b, rng.choice((0, 1)))
    for _ in range(16):
        await finish_match(store, ladder_id, "feeder", "fed", 1)


async def test_given_a_planted_pair_when_the_runner_catches_up_then_every_flag_names_that_pair(
    store: EventStore, conn: psycopg.Connection, database_url: str
) -> None:
    ladder_id = new_ladder(conn)
    await plant(store, ladder_id, random.Random(28))

    assert catch_up(database_url) >= 1

    flags = run(conn, ladder.stored(ladder_id)).flags
    assert {f.signal for f in flags} == {"pair_share", "one_sided", "early_ends", "rating_from_one"}
    assert all(f.players == ("fed", "feeder") for f in flags), flags
    early = next(f for f in flags if f.signal == "early_ends")
    assert early.numbers["early_ends"] == 16
    assert len(early.matches) == 16
    log = run(conn, matchlog.fairplay_log(ladder_id, DEFAULT_FAIRPLAY.fast_move_s))
    by_columns = flags_of_columns(ladder_id, columns_of_log(log), DEFAULT_FAIRPLAY, ELO)
    assert by_columns == flags_of_ladder(ladder_id, games_of(log), DEFAULT_FAIRPLAY, ELO)


async def test_given_a_live_projection_when_rebuilt_from_the_log_then_it_equals_a_fresh_recompute(
    store: EventStore, conn: psycopg.Connection, database_url: str
) -> None:
    ladders = [new_ladder(conn), new_ladder(conn)]
    rng = random.Random(7)
    for ladder_id in ladders:
        await plant(store, ladder_id, rng)
        catch_up(database_url)  # live: pass after pass, as results come in
    await finish_match(store, ladders[0], "fed", "feeder", 1)
    catch_up(database_url)
    live = [run(conn, ladder.stored(lad)) for lad in ladders]

    fresh = [run(conn, ladder.compute(lad)) for lad in ladders]
    assert live == fresh
    conn.execute("DELETE FROM fairplay_flags")
    assert rebuild(conn) == 2
    assert [run(conn, ladder.stored(lad)) for lad in ladders] == fresh


async def test_given_played_matches_the_store_counts_each_seats_timed_and_fast_moves_from_the_log(
    store: EventStore, conn: psycopg.Connection
) -> None:
    ladder_id = new_ladder(conn)
    for seed in (3, 4):
        match_id = f"timed-{seed}"
        await store_log(store, match_id, played_log(seed, match_id, ladder_id=ladder_id))

    found = {g.match_id: g for g in games_of(run(conn, matchlog.fairplay_log(ladder_id, 0.05)))}

    assert len(found) == 2
    for match_id, game in found.items():
        rows = run(conn, matchlog.rows_of_match(match_id))
        kept = [r for r in rows if r.type in TIMED_FROM]
        moves, fast = [0, 0], [0, 0]
        for before, row in itertools.pairwise(kept):
            event = row.event
            if isinstance(event, CardPlayed | Passed) and not getattr(event, "automatic", False):
                moves[event.seat] += 1
                fast[event.seat] += (row.recorded_at - before.recorded_at).total_seconds() < 0.05
        cards = sum(isinstance(r.event, CardPlayed) for r in rows)
        assert (*game.moves, *game.fast) == (*moves, *fast)
        assert game.cards_played == cards > 0 and moves[0] > 0
        assert game.position == rows[-1].position and game.annulled_at == 0
        assert game.finished and game.winner == rows[-1].event.winner  # type: ignore[union-attr]
