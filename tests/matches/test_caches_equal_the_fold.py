"""The core's three caches (folds, seeds, facts) only ever hold what the log says:
after every command the cached fold equals the fold of the whole log, also
when two cores take turns on one match; an earlier version folds as the log's
prefix; the remembered seed and facts are the stored ones."""

from __future__ import annotations

import msgspec
import pytest
from core_script import Clock, Table, one_match_two_cores

from schemas.rules import MatchTerms, RealTime
from service.engine import fold
from service.matches import MatchCore
from service.matches.facts import facts_of
from service.store import EventStore

pytestmark = pytest.mark.anyio


async def _cached_equals_the_fold(core: MatchCore, table: Table) -> None:
    cached = await core.current(table.match_id)
    state, summary, version = await table.truth()
    assert (cached.version, cached.state, cached.summary) == (version, state, summary)
    rows = await core.store.load(table.match_id)
    assert cached.head == rows[-1].hash


TIMED = MatchTerms(clock=RealTime(base_s=600, increment_s=2))


@pytest.mark.parametrize(
    ("ruleset", "terms"), [("duel", None), ("standard", None), ("duel", TIMED)]
)
async def test_given_a_whole_match_when_each_command_commits_then_the_cache_equals_the_fold(
    table: Table, clock: Clock, ruleset: str, terms: MatchTerms | None
) -> None:
    await table.start(ruleset, terms)
    for _ in range(500):
        if (await table.state()).ended:
            break
        clock.advance(1.25)  # a timed match's clocks depend on when each event was recorded
        await table.play()
        await _cached_equals_the_fold(table.core, table)
    else:
        raise AssertionError("the match did not end")


@pytest.mark.parametrize("terms", [None, TIMED])
async def test_given_two_cores_taking_turns_when_each_moves_then_both_caches_equal_the_fold(
    store: EventStore, clock: Clock, terms: MatchTerms | None
) -> None:
    tables = await one_match_two_cores(store, clock, "duel", terms)
    cores = (tables[0].core, tables[1].core)
    for turn in range(500):
        table = tables[turn % 2]
        if (await table.state()).ended:
            break
        clock.advance(1.25)
        await table.play()
        for core in cores:
            await _cached_equals_the_fold(core, table)
    else:
        raise AssertionError("the match did not end")


async def test_given_a_played_match_when_an_earlier_version_is_asked_then_the_log_prefix_folds(
    table: Table,
) -> None:
    await table.start()
    for _ in range(4):
        await table.play()
    rows = await table.core.store.load(table.match_id)
    seed = await table.core.store.load_seed(table.match_id)

    for version in range(2, len(rows) + 1):
        earlier = await table.core.at_version(table.match_id, version)
        prefix = rows[:version]
        assert earlier.version == version
        assert earlier.state == fold(
            [r.event for r in prefix], seed, times=[r.recorded_at for r in prefix]
        )


async def test_given_a_started_match_when_its_seed_and_facts_are_asked_then_the_stored_ones(
    store: EventStore, table: Table
) -> None:
    await table.start()
    created = (await store.load(table.match_id))[0].event
    stored_seed = await store.load_seed(table.match_id)
    other = MatchCore(store)  # one that did not start the match: it reads, then remembers

    for core in (table.core, other, other):
        assert await core.seed_of(table.match_id) == stored_seed
        facts, _ = await core.current_facts(table.match_id)
        assert facts == await facts_of(created, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("terms", [None, TIMED])
async def test_given_two_cores_when_one_learns_the_others_rows_then_its_fold_equals_the_log(
    store: EventStore, clock: Clock, terms: MatchTerms | None
) -> None:
    tables = await one_match_two_cores(store, clock, "duel", terms)
    mover, learner = tables[0], tables[1]
    await learner.core.current(mover.match_id)
    for _ in range(500):
        if (await mover.state()).ended:
            break
        before = learner.core.cached(mover.match_id)
        assert before is not None
        clock.advance(1.25)
        await mover.play()
        rows = await store.load(mover.match_id, after=before.version - 2)  # one known row too

        learner.core.learn(mover.match_id, rows)

        learned = learner.core.cached(mover.match_id)
        state, summary, version = await mover.truth()
        assert learned is not None
        assert (learned.version, learned.state, learned.summary) == (version, state, summary)
        assert learned.head == rows[-1].hash
    else:
        raise AssertionError("the match did not end")


async def test_given_rows_that_do_not_continue_the_cached_fold_when_learned_then_the_fold_stays(
    store: EventStore, clock: Clock
) -> None:
    tables = await one_match_two_cores(store, clock, "duel", None)
    mover, learner = tables[0], tables[1]
    held = await learner.core.current(mover.match_id)
    for _ in range(3):
        await mover.play()
    rows = await store.load(mover.match_id, after=held.version)
    forged = [msgspec.structs.replace(rows[0], prev_hash=b"\x00" * 32), *rows[1:]]

    learner.core.learn(mover.match_id, rows[1:])  # a gap: the row after the fold is missing
    learner.core.learn(mover.match_id, forged)  # does not link to the fold's head

    assert learner.core.cached(mover.match_id) == held
