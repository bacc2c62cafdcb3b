"""The after-commit hooks that wake the workers: the projection runners hear of a
commit that ends a match or follows its end, never of a move; the clock
sweepers hear of every commit of a timed match, never of an untimed one."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from schemas.events import DisputeFiled, Event, MatchAnnulled, MatchCreated, MatchEnded
from schemas.rules import DEFAULT_TERMS, STANDARD, MatchTerms, RealTime
from service.bots import heuristic_bot, random_bot
from service.broker.channels import clocks_channel, projections_channel
from service.broker.wake import clocks_hint_hook, projections_hint_hook, wakes_projections
from service.engine.selfplay import play_match
from service.matches import Committed, MatchFacts

pytestmark = pytest.mark.anyio

AT = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Row:
    version: int
    recorded_at: datetime
    event: Event

    @property
    def type(self) -> str:
        return str(type(self.event).__struct_config__.tag)


class FakeRedis:
    def __init__(self) -> None:
        self.published: list[tuple[str, str]] = []

    async def publish(self, channel: str, payload: str) -> int:
        self.published.append((channel, payload))
        return 1


def _log(seed: int) -> list[Row]:
    _, events = play_match((random_bot, heuristic_bot), STANDARD, random.Random(seed), "m-1")
    return [Row(version=i, recorded_at=AT, event=e) for i, e in enumerate(events, 1)]


def _committed(
    log_: list[Row], rows: list[Row], *, over_before: bool, terms: MatchTerms = DEFAULT_TERMS
) -> Committed:
    created = log_[0].event
    assert isinstance(created, MatchCreated)
    return Committed(
        facts=MatchFacts(created=created, terms=terms),
        stored=tuple(rows),  # type: ignore[arg-type]
        over_before=over_before,
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_given_a_whole_match_when_each_event_commits_then_only_its_end_wakes_the_runners(
    seed: int,
) -> None:
    log_ = _log(seed)
    woken = [wakes_projections(_committed(log_, [row], over_before=False)) for row in log_]

    assert woken == [isinstance(row.event, MatchEnded) for row in log_]
    assert woken[-1] and not any(woken[:-1])


def test_given_an_ended_match_when_a_dispute_or_an_annulment_commits_then_the_runners_wake() -> (
    None
):
    log_ = _log(3)
    after = len(log_)
    dispute = DisputeFiled(dispute_id="d-1", seat=0, player="p", reason="A misdeal.")
    annulled = MatchAnnulled(admin="admin-1", reason="Upheld.")

    for event in (dispute, annulled):
        row = Row(version=after + 1, recorded_at=AT, event=event)
        assert wakes_projections(_committed(log_, [row], over_before=True))
    during_play = Row(version=3, recorded_at=AT, event=annulled)
    assert wakes_projections(_committed(log_, [during_play], over_before=False))


async def test_given_both_hooks_when_a_move_and_the_end_commit_then_each_hears_its_own() -> None:
    log_ = _log(4)
    redis = FakeRedis()
    timed = MatchTerms(clock=RealTime(base_s=60))
    projections = projections_hint_hook(redis, "t")
    clocks = clocks_hint_hook(redis, "t")

    move, end = log_[2], log_[-1]
    for rows, terms in (([move], DEFAULT_TERMS), ([move], timed), ([end], DEFAULT_TERMS)):
        committed = _committed(log_, rows, over_before=False, terms=terms)
        await projections(committed)
        await clocks(committed)

    assert redis.published == [(clocks_channel("t"), "m-1"), (projections_channel("t"), "m-1")]
