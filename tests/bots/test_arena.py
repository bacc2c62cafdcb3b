"""Bot against bot: the Wilson interval, reproducible runs on any number of
workers, and the ``matcha bots`` command."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from service.bots.arena import play_matches, tally, wilson
from service.cli import main


@pytest.mark.parametrize(
    ("wins", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (130, 200, 0.5816, 0.7127),
    ],
)
def test_the_wilson_interval_matches_the_published_values(wins, n, low, high) -> None:
    lo, hi = wilson(wins, n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_a_run_gives_the_same_matches_on_one_worker_or_two() -> None:
    one = play_matches("beginner", "heuristic", "duel", 8, seed=5, workers=1)
    two = play_matches("beginner", "heuristic", "duel", 8, seed=5, workers=2)
    assert [(o.index, o.a_seat, o.winner) for o in one] == [
        (o.index, o.a_seat, o.winner) for o in two
    ]
    assert [o.a_seat for o in one] == [0, 1] * 4
    assert tally(one).matches == 8


def test_matcha_bots_prints_the_win_rate_with_its_95_percent_interval() -> None:
    result = CliRunner().invoke(
        main, ["bots", "casual", "random", "-n", "12", "--ruleset", "duel", "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "12 matches, A=casual vs B=random" in result.output
    assert "95 % interval" in result.output and "Wilson" in result.output
    t = tally(play_matches("casual", "random", "duel", 12, seed=1, workers=1))
    assert f"A wins {t.a_wins}, B wins {t.b_wins}, draws {t.draws}" in result.output


def test_matcha_bots_names_the_bots_it_knows_when_given_another() -> None:
    result = CliRunner().invoke(main, ["bots", "deep-blue", "random", "-n", "1"])
    assert result.exit_code == 2
    assert "Unknown bot 'deep-blue'" in result.output and "master" in result.output
