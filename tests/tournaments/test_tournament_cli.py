"""``matcha tournament``: a whole tournament of bots in memory, final standings printed."""

from __future__ import annotations

import re

from click.testing import CliRunner

from service.cli import main


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if re.match(r"^\s*\d+\s+\w+-\d+", line)]


def test_a_swiss_of_bots_prints_standings_with_tiebreak_columns() -> None:
    result = CliRunner().invoke(
        main,
        [
            "tournament",
            "--format",
            "swiss",
            "--players",
            "9",
            "--rounds",
            "3",
            "--seed",
            "5",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"#\s+player\s+rating\s+pts\s+W-D-L\s+BH-C1\s+BH\s+SB", result.output)
    rows = _rows(result.output)
    assert len(rows) == 9
    points = [float(r[3]) for r in rows]
    assert points == sorted(points, reverse=True)
    # 4 games and a 1-point bye a round, 3 rounds
    assert sum(points) == 3 * (4 + 1)


def test_a_double_round_robin_and_an_arena_run_to_their_end() -> None:
    rr = CliRunner().invoke(
        main,
        [
            "tournament",
            "--format",
            "round-robin",
            "--players",
            "4",
            "--cycles",
            "2",
            "--seed",
            "1",
            "--quiet",
        ],
    )
    assert rr.exit_code == 0, rr.output
    assert "6 rounds" in rr.output and len(_rows(rr.output)) == 4
    assert sum(float(r[3]) for r in _rows(rr.output)) == 12  # 6 rounds of 2 games
    arena = CliRunner().invoke(
        main,
        [
            "tournament",
            "--format",
            "arena",
            "--players",
            "6",
            "--minutes",
            "20",
            "--seed",
            "2",
            "--quiet",
        ],
    )
    assert arena.exit_code == 0, arena.output
    assert len(_rows(arena.output)) == 6


def test_an_unknown_tiebreak_is_a_usage_error_naming_it() -> None:
    result = CliRunner().invoke(
        main, ["tournament", "--tiebreaks", "buchholz,coin_toss", "--quiet"]
    )
    assert result.exit_code == 2
    assert "'coin_toss'" in result.output
