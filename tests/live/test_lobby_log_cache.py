"""The publisher makes lobby summaries from the core's tally (no read), else tallies
the log it saw and reloads after a gap."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
import pytest

from schemas.events import Event, MatchCreated
from schemas.rules import DEFAULT_TERMS, STANDARD
from service.bots import heuristic_bot, random_bot
from service.broker.hints import LobbySummary
from service.broker.publish import Publisher, lobby_summary
from service.engine.selfplay import play_match
from service.matches import Committed, MatchFacts
from service.matches.summaries import Summary, summarise

pytestmark = pytest.mark.anyio


class FakeRedis:
    def __init__(self) -> None:
        self.lobby: list[LobbySummary] = []

    async def publish(self, channel: str, payload: bytes) -> int:
        if channel.endswith(":lobby"):
            self.lobby.append(msgspec.json.decode(payload, type=LobbySummary))
        return 1


@dataclass(frozen=True)
class Row:
    """A committed row, as far as the publisher reads one."""

    version: int
    recorded_at: datetime
    event: Event


def _log(seed: int) -> list[Row]:
    _, events = play_match((random_bot, heuristic_bot), STANDARD, random.Random(seed), "m-1")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return [Row(version=i, recorded_at=at, event=e) for i, e in enumerate(events, 1)]


def _committed(log_: list[Row], rows: list[Row], summary: Summary | None = None) -> Committed:
    created = log_[0].event
    assert isinstance(created, MatchCreated)
    return Committed(
        facts=MatchFacts(created=created, terms=DEFAULT_TERMS),
        stored=tuple(rows),  # type: ignore[arg-type]
        over_before=False,
        summary=summary,
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_each_lobby_summary_equals_the_tally_of_the_log_so_far(seed: int) -> None:
    log_ = _log(seed)
    loads: list[int] = []

    async def load_log(match_id: str) -> list[Row]:
        loads.append(len(log_))
        return log_[: committed[0]]

    committed = [0]
    redis = FakeRedis()
    publisher = Publisher(redis, "t", load_log=load_log)
    expected: list[LobbySummary | None] = []
    rng = random.Random(seed)
    start = 0
    gap_at = len(log_) // 2
    while start < len(log_):
        end = min(len(log_), start + rng.randint(1, 4))
        committed[0] = end
        if start <= gap_at < end:
            start = end  # another process appended these: this one never saw them
            continue
        await publisher(_committed(log_, log_[start:end]))  # batches of 1..4, as commands make
        await publisher.drain()
        if len(redis.lobby) > len(expected):
            expected.append(lobby_summary("m-1", log_[:end]))
        start = end

    assert redis.lobby == expected
    assert len(expected) > 3
    # Only the batch after the gap needed the whole log from the store.
    assert len(loads) == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_given_the_cores_tally_when_batches_commit_then_no_log_is_read_even_after_a_gap(
    seed: int,
) -> None:
    log_ = _log(seed)
    loads: list[int] = []

    async def load_log(match_id: str) -> list[Row]:
        loads.append(1)
        return log_

    redis = FakeRedis()
    publisher = Publisher(redis, "t", load_log=load_log)
    expected: list[LobbySummary | None] = []
    rng = random.Random(seed)
    start = 0
    gap_at = len(log_) // 2
    while start < len(log_):
        end = min(len(log_), start + rng.randint(1, 4))
        if start <= gap_at < end:
            start = end  # another process appended these
            continue
        tally = summarise(row.event for row in log_[:end])
        await publisher(_committed(log_, log_[start:end], tally))
        await publisher.drain()
        if len(redis.lobby) > len(expected):
            expected.append(lobby_summary("m-1", log_[:end]))
        start = end

    assert redis.lobby == expected
    assert len(expected) > 3
    assert loads == []


async def test_without_a_loader_there_is_no_lobby_summary() -> None:
    redis = FakeRedis()
    publisher = Publisher(redis, "t")
    log_ = _log(1)
    await publisher(_committed(log_, log_[:2]))
    await publisher.drain()
    assert redis.lobby == []
