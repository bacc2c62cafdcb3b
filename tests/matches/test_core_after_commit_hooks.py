"""After-commit hooks hear exactly what committed: the rows the append wrote, in
order, with the match's facts; a failing hook never fails the command; a
refusal or a replayed answer commits nothing and calls no hook."""

from __future__ import annotations

import logging

import pytest
from core_script import Table

from schemas.commands import Pass
from service.errors import RuleError
from service.matches import AfterCommit, Committed
from service.matches.disputes import annul

pytestmark = pytest.mark.anyio


def _recorder(heard: list[Committed]) -> AfterCommit:
    async def hook(committed: Committed) -> None:
        heard.append(committed)

    return hook


async def test_given_a_hook_when_a_match_starts_and_moves_then_it_hears_each_append(
    table: Table,
) -> None:
    heard: list[Committed] = []
    table.core.after_commit.append(_recorder(heard))

    await table.start()
    accepted = await table.play()

    assert [[r.version for r in c.stored] for c in heard] == [
        [1, 2],
        [r.version for r in accepted.stored],
    ]
    assert all(c.match_id == table.match_id for c in heard)
    assert heard[1].stored == accepted.stored
    assert heard[1].facts.players == ("ann", "bo")
    assert not heard[1].over_before
    assert heard[1].clocks is None  # an untimed match


async def test_given_an_ended_match_when_more_commits_then_the_hook_is_told_it_was_over(
    table: Table,
) -> None:
    heard: list[Committed] = []
    await table.start()
    await table.resign(0)
    table.core.after_commit.append(_recorder(heard))

    await annul(table.core, table.match_id, "admin-1", "A test of the annulment's hook.")

    assert heard[-1].over_before
    assert [r.type for r in heard[-1].stored] == ["match_annulled"]


async def test_given_a_failing_hook_when_a_command_commits_then_it_is_logged_and_the_rest_run(
    table: Table, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[Committed] = []

    async def broken(committed: Committed) -> None:
        raise RuntimeError("the hint channel is down")

    table.core.after_commit[:] = [broken, _recorder(heard)]
    with caplog.at_level(logging.ERROR, logger="matcha.matches"):
        await table.start()
        accepted = await table.play()

    assert heard[-1].stored == accepted.stored
    assert await table.version() == accepted.version
    assert "after-commit hook" in caplog.text and "the hint channel is down" in caplog.text


async def test_given_a_hook_when_a_command_is_refused_or_replayed_then_it_hears_nothing(
    table: Table,
) -> None:
    heard: list[Committed] = []
    await table.start()
    command = await table.legal()
    await table.play(command, idempotency_key="k-1")
    table.core.after_commit.append(_recorder(heard))

    await table.play(command, idempotency_key="k-1")
    with pytest.raises(RuleError):
        await table.play(Pass(seat=1 - await table.mover()))  # type: ignore[arg-type]

    assert heard == []
