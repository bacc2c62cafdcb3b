"""Playouts: the fast heuristic policy plays the heuristic bot's rule, through the engine."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.commands import KeepCards, Pass, PlayCard
from schemas.rules import DUEL, STANDARD
from service.bots.determinize import sample_table
from service.bots.infoset import info_set
from service.bots.playout import fast_heuristic, playout
from service.bots.simple import _free_targets, _target_value
from service.engine import fold, view
from service.engine.selfplay import play_match
from tests.bots.positions import mover, position


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    ruleset=st.sampled_from([STANDARD, DUEL]),
    commands=st.integers(0, 60),
    draw=st.integers(0, 2**32),
)
def test_the_fast_heuristic_plays_a_move_the_heuristic_bot_could_play(
    seed: int, ruleset, commands: int, draw: int
) -> None:
    s = position(seed, ruleset, commands, heuristic=False)
    seat = mover(s)
    command = fast_heuristic(s, seat, random.Random(draw))
    if s.phase == "keeping":
        assert command == KeepCards(seat=seat, cards=s.hands[seat])
        return
    free = _free_targets(s, seat)
    if not free or not s.hands[seat]:
        assert command == Pass(seat=seat)
        return
    assert isinstance(command, PlayCard)
    assert command.card in s.hands[seat]
    values = {t: _target_value(s, seat, t) for t in free}
    assert values[command.target] == max(values.values())


def test_the_fast_heuristic_draws_ties_and_cards_evenly() -> None:
    s = position(4, STANDARD, 0)
    seat = mover(s)
    rng = random.Random(0)
    seen = {fast_heuristic(s, seat, rng) for _ in range(400)}
    values = {t: _target_value(s, seat, t) for t in ("number", "suit")}
    targets = [t for t in values if values[t] == max(values.values())]
    assert len(seen) == len(s.hands[seat]) * len(targets)


@pytest.mark.parametrize("ruleset", [STANDARD, DUEL], ids=["standard", "duel"])
def test_a_playout_ends_the_match_by_the_engines_rules(ruleset) -> None:
    for seed in range(20):
        s = position(seed, ruleset, seed)
        t = sample_table(info_set(view(s, "spectator")), random.Random(seed))
        winner = playout(t, fast_heuristic, random.Random(seed))
        assert t.phase == "ended" and t.ended
        assert winner == t.winner


def test_self_play_with_the_fast_heuristic_gives_logs_the_engine_folds_to_the_same_end() -> None:
    final, log = play_match((fast_heuristic, fast_heuristic), STANDARD, random.Random(3))
    assert fold(log, final.seed) == final
