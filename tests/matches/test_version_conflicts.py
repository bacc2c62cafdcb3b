"""Optimistic concurrency: a command that expects a version the match has left
is a ``VersionConflict`` with the log unchanged; one that expects none is
decided again on the latest state after a lost race, a bounded number of times."""

from __future__ import annotations

from typing import Any

import pytest
from core_script import Clock, Table, one_match_two_cores

from service.errors import VersionConflict
from service.matches.core import RETRIES_WITHOUT_EXPECTED_VERSION
from service.store import EventStore

pytestmark = pytest.mark.anyio


async def test_given_the_match_moved_on_when_a_command_expects_the_old_version_then_conflict(
    table: Table,
) -> None:
    await table.start()
    seen = await table.version()
    await table.play()
    command = await table.legal()
    before = await table.version()

    with pytest.raises(VersionConflict):
        await table.play(command, expected_version=seen)

    assert await table.version() == before


async def test_given_the_current_version_when_a_command_expects_it_then_it_is_accepted(
    table: Table,
) -> None:
    await table.start()

    accepted = await table.play(expected_version=await table.version())

    assert accepted.version == await table.version()


async def test_given_a_second_core_moved_the_match_when_a_stale_core_runs_a_command_then_retry(
    store: EventStore, clock: Clock
) -> None:
    here, there = await one_match_two_cores(store, clock)  # the first caches version 2
    await there.play()  # the second core moves the match on: the first core's cache is stale
    command = await there.legal()

    accepted = await here.play(command)  # no expected version: the latest state decides

    assert accepted.version == await here.version()
    assert accepted.folded.state == (await here.truth())[0]


async def test_given_a_stale_cache_when_a_command_expects_the_latest_version_then_accepted(
    store: EventStore, clock: Clock
) -> None:
    here, there = await one_match_two_cores(store, clock)
    await there.play()
    latest = await here.version()

    accepted = await here.play(await there.legal(), expected_version=latest)

    assert accepted.version > latest


async def test_given_appends_that_keep_losing_when_no_version_is_expected_then_retries_are_bounded(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    await table.start()
    command = await table.legal()
    attempts: list[int] = []

    async def always_beaten(match_id: str, expected: int, *args: Any, **kwargs: Any) -> Any:
        attempts.append(expected)  # what a racing append does to each of ours
        raise VersionConflict(f"The match is past version {expected}.")

    monkeypatch.setattr(table.core.store, "append", always_beaten)

    with pytest.raises(VersionConflict):
        await table.play(command)

    # each run tries its cached fold, then once more after reading the latest
    assert len(attempts) == RETRIES_WITHOUT_EXPECTED_VERSION * 2
