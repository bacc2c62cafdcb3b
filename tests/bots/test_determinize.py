"""Every determinization is consistent with the view it was drawn from.

Positions come from bot matches played through the engine; hypothesis picks
the match, the ruleset, how far it has gone and the sampling seed.
"""

from __future__ import annotations

import random
from collections import Counter

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.cards import ALL_CARDS
from schemas.rules import DUEL, STANDARD
from schemas.views import MatchView
from service.bots.determinize import sample
from service.bots.infoset import NotAPosition, info_set
from service.engine import State, initial_state, view
from service.engine.state import slot
from tests.bots.positions import hidden_from, position

VIEWERS = (0, 1, "spectator")


def without_commitment(v: MatchView) -> MatchView:
    # A determinization deals its future from a fresh seed: it carries no commitment.
    return msgspec.structs.replace(v, seed_commitment=None)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    ruleset=st.sampled_from([STANDARD, DUEL]),
    commands=st.integers(0, 80),
    heuristic=st.booleans(),
    draw=st.integers(0, 2**32),
)
def test_every_determinization_gives_back_the_very_view_it_was_drawn_from(
    seed: int, ruleset, commands: int, heuristic: bool, draw: int
) -> None:
    real = position(seed, ruleset, commands, heuristic)
    rng = random.Random(draw)
    for viewer in VIEWERS:
        seen = view(real, viewer)
        info = info_set(seen)
        assert set(info.unseen) == hidden_from(real, viewer)
        for _ in range(5):
            guess = sample(info, rng)
            assert view(guess, viewer) == without_commitment(seen)
            tea = [c for pair in guess.tea for c in (pair.number, pair.suit)]
            placed = [c for c in guess.placed if c is not None]
            every = [*tea, *guess.hands[0], *guess.hands[1], *placed, *guess.set_aside]
            assert sorted(every) == sorted(ALL_CARDS)
            for seat in (0, 1):
                kept = guess.kept[seat]
                if kept is not None:
                    mine = set(guess.hands[seat]) | {
                        guess.placed[slot(r, seat, t)] for r in (1, 2, 3) for t in (0, 1)
                    }
                    assert set(kept) <= mine
            if viewer != "spectator":
                assert guess.kept[viewer] == real.kept[viewer]


def test_a_determinization_deals_each_unseen_card_to_the_opponent_as_often_as_any_other() -> None:
    real = position(11, STANDARD, 7)
    seen = view(real, 0)
    info = info_set(seen)
    rng = random.Random(5)
    counts: Counter[str] = Counter()
    draws = 4000
    for _ in range(draws):
        counts.update(sample(info, rng).hands[1])
    expected = info.hand_counts[1] / len(info.unseen)
    assert len(info.unseen) > info.hand_counts[1] > 1
    for card in info.unseen:
        assert abs(counts[card] / draws - expected) < 0.04, (card, counts[card], expected)
    assert set(counts) == set(info.unseen)


def test_a_seat_view_leaves_only_the_opponents_cards_and_the_set_aside_ones_unseen() -> None:
    real = position(3, DUEL, 3)
    info = info_set(view(real, 1))
    assert info.hands[1] == real.hands[1]
    assert info.hands[0] is None
    assert info.set_aside_count == 2
    assert set(real.set_aside) <= set(info.unseen)
    assert not set(real.hands[1]) & set(info.unseen)


def test_there_is_nothing_to_sample_before_the_first_deal() -> None:
    with pytest.raises(NotAPosition):
        info_set(view(initial_state(), "spectator"))


def seat_0_kept_first(s: State) -> bool:
    return s.phase == "keeping" and s.kept[0] is not None and s.kept[1] is None


def test_a_secret_keep_choice_is_drawn_from_the_hand_and_its_count_stays_secret() -> None:
    for seed in range(200):
        real = position(seed, STANDARD, 200, heuristic=False, stop=seat_0_kept_first)
        if real.phase == "keeping" and real.kept[0] is not None and real.kept[1] is None:
            break
    else:
        pytest.fail("no keeping position found")
    seen = view(real, 1)
    info = info_set(seen)
    assert info.kept_secret == (True, False)
    sizes = set()
    rng = random.Random(1)
    for _ in range(200):
        guess = sample(info, rng)
        assert guess.kept[0] is not None and set(guess.kept[0]) <= set(guess.hands[0])
        sizes.add(len(guess.kept[0]))
        assert view(guess, 1) == without_commitment(seen)
    assert len(sizes) > 1  # the count is not given away
