"""The spectators' estimate: a probability per seat, the result once over, calibrated."""

from __future__ import annotations

import random

import msgspec
import pytest

from schemas.commands import Resign
from schemas.rules import DUEL, STANDARD
from schemas.views import Tokens
from service.bots.calibration import brier_skill, calibration_table, expected_score
from service.bots.playout import fast_heuristic
from service.bots.search import Budget
from service.bots.winprob import estimate, estimate_for_spectators, view_seed
from service.engine import State, step, view
from service.engine.selfplay import play_match
from service.engine.state import Board, freeze
from tests.bots.positions import position

BUDGET = Budget(playouts=60)


@pytest.mark.parametrize("ruleset", [STANDARD, DUEL], ids=["standard", "duel"])
def test_each_seats_chance_is_a_probability_and_the_two_leave_room_only_for_a_draw(
    ruleset,
) -> None:
    for seed in range(10):
        seen = view(position(seed, ruleset, 3 * seed), "spectator")
        p0, p1 = estimate(seen, BUDGET, view_seed(seen)).p
        assert 0 <= p0 <= 1 and 0 <= p1 <= 1 and p0 + p1 <= 1


def test_once_the_match_is_over_the_estimate_is_its_result() -> None:
    s, _ = step(position(1, STANDARD, 5), Resign(seat=0))
    result = estimate(view(s, "spectator"), BUDGET, 0)
    assert result.p == (0.0, 1.0) and result.playouts == 0


def test_a_seat_about_to_win_is_the_favourite() -> None:
    s = position(6, STANDARD, 2)
    ahead = msgspec.structs.replace(s, tokens=(Tokens(matcha=3, chawan=3, water=3), Tokens()))
    p0, p1 = estimate_for_spectators(view(ahead, "spectator"), BUDGET)
    assert p0 > 0.8 > p1


def test_the_same_view_always_gets_the_same_estimate() -> None:
    seen = view(position(9, DUEL, 4), "spectator")
    assert estimate_for_spectators(seen, BUDGET) == estimate_for_spectators(seen, BUDGET)


def watched_match(game: int) -> tuple[list[float], float]:
    """A heuristic duel, estimated at about a third of its positions: (forecasts, score)."""
    asked = random.Random(game)
    forecasts: list[float] = []

    def watched(board: Board, seat, rng):
        if asked.random() < 0.3:
            state = board if isinstance(board, State) else freeze(board)
            p = estimate_for_spectators(view(state, "spectator"), BUDGET)
            forecasts.append(expected_score(p))
        return fast_heuristic(board, seat, rng)

    final, _ = play_match((watched, watched), DUEL, random.Random(1000 + game))
    return forecasts, 0.5 if final.winner is None else float(final.winner == 0)


def test_over_many_duel_matches_the_estimate_beats_a_constant_one_half() -> None:
    forecasts: list[float] = []
    outcomes: list[float] = []
    for game in range(50):
        mine, score = watched_match(game)
        forecasts += mine
        outcomes += [score] * len(mine)
    assert len(forecasts) > 150
    assert brier_skill(forecasts, outcomes) > 0.15  # 0.27 measured
    table = calibration_table(forecasts, outcomes)
    assert sum(b.positions for b in table) == len(forecasts)


def test_brier_skill_is_zero_for_the_constant_and_one_for_a_prophet() -> None:
    outcomes = [1.0, 0.0, 1.0, 0.5]
    assert brier_skill([0.5] * 4, outcomes) == 0.0
    assert brier_skill(outcomes, outcomes) == 1.0
    assert brier_skill([0.0, 1.0, 0.0, 0.5], outcomes) < 0


@pytest.mark.parametrize("ruleset", [STANDARD, DUEL], ids=lambda r: r.name)
def test_a_replay_frame_between_the_events_of_one_command_gets_an_estimate_too(
    ruleset: object,
) -> None:
    """A replay shows every version, also those inside one append (an automatic
    pass before its reveal, a hand's end before the next deal): the estimator
    owes them an answer as much as the versions where a seat has to act."""
    from service.engine import evolve
    from service.engine.state import initial_state

    for seed in range(3):
        rng = random.Random(seed)
        _, log = play_match((fast_heuristic, fast_heuristic), ruleset, rng)  # type: ignore[arg-type]
        state = initial_state()
        for version, event in enumerate(log, start=1):
            state = evolve(state, event)
            seen = view(state, "spectator", version=version)
            p = estimate(seen, Budget(playouts=8, max_ms=None), view_seed(seen)).p
            assert 0.0 <= p[0] + p[1] <= 1.0 + 1e-9, (version, type(event).__name__)
