"""The end explained (service.engine.outcome) agrees with the rule that decided it
(service.engine.winning): same sets, same comparison, for any tokens."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schemas.rules import DUEL, STANDARD, Ruleset
from schemas.views import Tokens
from service.engine.outcome import comparison_steps, decision, winning_sets
from service.engine.winning import compare, qualifies

tokens = st.builds(Tokens, *[st.integers(0, 7)] * 5)
rulesets = st.sampled_from([STANDARD, DUEL])


@given(tokens, rulesets)
def test_the_winning_sets_are_found_exactly_when_the_tokens_qualify(t: Tokens, r: Ruleset) -> None:
    sets = winning_sets(t, r)
    assert bool(sets) == qualifies(t, r)
    for s in sets:
        assert s.count >= s.needed
        if s.way == "suit":
            assert s.needed == r.suit_tokens_to_win and t[s.kind] == s.count  # type: ignore[index]


@given(tokens, tokens)
def test_the_comparison_steps_end_where_compare_decides(a: Tokens, b: Tokens) -> None:
    steps = comparison_steps(a, b)
    last = steps[-1]
    winner = compare(a, b)
    if winner is None:
        assert [s.kind for s in steps] == ["matcha", "chawan", "water", "chashaku"]
        assert all(s.counts[0] == s.counts[1] for s in steps)
    else:
        assert last.counts[winner] > last.counts[1 - winner]
        assert all(s.counts[0] == s.counts[1] for s in steps[:-1])


def test_given_a_duel_won_with_three_water_then_the_set_is_three_water_of_three() -> None:
    sets = winning_sets(Tokens(water=3, chasen=1), DUEL)
    assert [(s.way, s.kind, s.count, s.needed) for s in sets] == [("suit", "water", 3, 3)]


def test_given_each_end_reason_then_the_decision_is_named_in_the_games_words() -> None:
    assert decision("qualified", 0, False) == "winning_set"
    assert decision("comparison", 1, False) == "comparison"
    assert decision("hand_limit", None, False) == "draw"
    assert decision("hand_limit", 0, False) == "hand_limit"
    assert decision("resigned", 1, False) == "resigned"
    assert decision("qualified", 0, True) == "annulled"
