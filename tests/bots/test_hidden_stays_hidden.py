"""The search bot and the spectators' estimate see a view, never a state.

Given two matches that differ only in what the viewer cannot see, they give
the same answer for the same seed: hidden information is hidden by construction.
"""

from __future__ import annotations

import random
import typing

import msgspec
import pytest

from schemas.rules import DUEL, STANDARD
from schemas.views import MatchView, Viewer
from service.bots.determinize import sample
from service.bots.infoset import info_set
from service.bots.levels import search_bot
from service.bots.search import Budget, search
from service.bots.winprob import estimate, estimate_for_spectators
from service.engine import State, view
from tests.bots.positions import position

BUDGET = Budget(playouts=60)


def other_hidden_state(real: State, viewer: Viewer, seed: int) -> State:
    """A different match with the same view for ``viewer``: its hidden cards redrawn."""
    rng = random.Random(seed)
    for _ in range(100):
        other = sample(info_set(view(real, viewer)), rng)
        if other.hands != real.hands:
            # The same public commitment (the views show it); the seed stays secret.
            return msgspec.structs.replace(other, seed_commitment=real.seed_commitment)
    raise AssertionError("no other hidden state found")


@pytest.mark.parametrize("ruleset", [STANDARD, DUEL], ids=["standard", "duel"])
@pytest.mark.parametrize("commands", [0, 5, 13])
def test_two_matches_that_differ_only_in_hidden_cards_get_the_same_move(
    ruleset, commands: int
) -> None:
    real = position(40 + commands, ruleset, commands)
    seat = real.to_move
    assert seat is not None
    other = other_hidden_state(real, seat, 1)
    assert other.hands[1 - seat] != real.hands[1 - seat]
    assert view(other, seat) == view(real, seat)
    bot = search_bot(BUDGET)
    assert bot(real, seat, random.Random(9)) == bot(other, seat, random.Random(9))


@pytest.mark.parametrize("ruleset", [STANDARD, DUEL], ids=["standard", "duel"])
def test_two_matches_that_differ_only_in_hidden_cards_get_the_same_estimate(ruleset) -> None:
    real = position(77, ruleset, 9)
    other = other_hidden_state(real, "spectator", 2)
    assert other.hands != real.hands
    assert view(other, "spectator") == view(real, "spectator")
    assert estimate_for_spectators(view(real, "spectator"), BUDGET) == estimate_for_spectators(
        view(other, "spectator"), BUDGET
    )


def test_the_estimate_does_change_when_what_a_spectator_sees_changes() -> None:
    # (so the test above could fail: the estimate is not a constant)
    answers = {
        estimate_for_spectators(view(position(s, DUEL, 12), "spectator"), BUDGET) for s in range(6)
    }
    assert len(answers) > 1


def test_the_move_and_estimate_functions_take_a_view_and_no_state() -> None:
    for function in (search, estimate, estimate_for_spectators):
        hints = typing.get_type_hints(function)
        assert hints["view"] is MatchView
        assert State not in hints.values()


def test_the_spectators_estimate_refuses_a_seats_view() -> None:
    real = position(5, STANDARD, 4)
    with pytest.raises(ValueError, match="spectator"):
        estimate_for_spectators(view(real, 0), BUDGET)
