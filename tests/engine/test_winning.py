"""RULES §6, §9: qualifying, both qualifying, the duel variant, the hand limit, resigning."""

from datetime import UTC, datetime

import pytest
from engine_script import SEED, TEA, created, dealt, finish_round, play_through, with_tokens

from schemas.commands import Pass, Resign
from schemas.events import HandEnded, MatchEnded, RoundRevealed, TokenAward
from schemas.rules import DUEL, STANDARD, Ruleset
from schemas.views import Tokens
from service.engine import State, fold, is_terminal, time_out
from service.engine.winning import compare, qualifies, tokens_to_qualify
from service.errors import RuleError

HAND0 = ("M1", "M3", "C2", "S2", "Z1")
HAND1 = ("M4", "C4", "W3", "S3", "Z2")


def start(ruleset: Ruleset = STANDARD, hand: int = 1, tea=TEA, hands=(HAND0, HAND1)) -> State:
    return fold([created(ruleset), dealt(tea, *hands, hand=hand)], seed=SEED)


def ended(events: list) -> MatchEnded | None:
    found = [e for e in events if isinstance(e, MatchEnded)]
    return found[0] if found else None


def all_pass(state: State) -> list:
    log: list = []
    while state.phase == "playing" and not is_terminal(state):
        assert state.to_move is not None
        state, events = play_through(state, Pass(seat=state.to_move))
        log.extend(events)
    return log


@pytest.mark.parametrize(
    ("tokens", "standard", "duel"),
    [
        ({"matcha": 4}, True, True),
        ({"water": 3}, False, True),
        ({"chasen": 3}, False, False),
        ({"chasen": 4}, True, True),
        ({"matcha": 1, "chawan": 1, "water": 1, "chashaku": 1, "chasen": 1}, True, True),
        ({"matcha": 1, "chawan": 1, "water": 1, "chashaku": 1}, False, False),
    ],
)
def test_who_qualifies_under_each_ruleset(tokens: dict, standard: bool, duel: bool) -> None:
    assert qualifies(Tokens(**tokens), STANDARD) is standard
    assert qualifies(Tokens(**tokens), DUEL) is duel
    assert (tokens_to_qualify(Tokens(**tokens), STANDARD) == 0) is standard


def test_the_comparison_goes_matcha_then_chawan_then_water_then_chashaku() -> None:
    assert compare(Tokens(matcha=1), Tokens(chawan=3)) == 0
    assert compare(Tokens(chawan=1, chasen=4), Tokens(chawan=1, water=1)) == 1
    assert compare(Tokens(chashaku=2), Tokens(chashaku=1, chasen=5)) == 0
    assert compare(Tokens(water=1, chasen=3), Tokens(water=1)) is None, "chasen never counts"


def test_given_three_matcha_when_a_lone_card_wins_a_fourth_then_that_player_wins_at_once() -> None:
    state = with_tokens(start(), {"matcha": 3}, {})
    events = finish_round(state, [(0, "Z1", "number")])
    assert events[-1] == MatchEnded(winner=0, reason="qualified", seed=SEED)


def test_given_standard_rules_three_of_a_suit_does_not_win_but_in_a_duel_it_does() -> None:
    standard = finish_round(with_tokens(start(STANDARD), {"matcha": 2}, {}), [(0, "Z1", "number")])
    assert ended(standard) is None
    duel = finish_round(with_tokens(start(DUEL), {"matcha": 2}, {}), [(0, "Z1", "number")])
    assert duel[-1] == MatchEnded(winner=0, reason="qualified", seed=SEED)


def test_given_both_qualify_at_once_then_more_matcha_wins() -> None:
    tea = (("M2", "W3"), ("W4", "S1"), ("C1", "W2"))
    hands = (("M1", "M3", "C2", "S2", "Z1"), ("M4", "C4", "C3", "S3", "Z2"))
    state = with_tokens(start(tea=tea, hands=hands), {"matcha": 3}, {"water": 3, "matcha": 1})
    events = finish_round(state, [(0, "Z1", "number"), (1, "Z2", "suit")])
    assert events[-1] == MatchEnded(winner=0, reason="comparison", seed=SEED)


def test_given_both_qualify_with_equal_suits_then_play_goes_on_and_the_next_round_decides() -> None:
    tea = (("M2", "M3"), ("W4", "S1"), ("C1", "W2"))
    hands = (("C2", "Z1", "S3", "C4", "W1"), ("M4", "Z2", "W3", "C3", "S4"))
    # One of each but matcha, both; this round each wins a matcha and a chasen.
    before = {"chawan": 1, "water": 1, "chashaku": 1, "chasen": 1}
    state = with_tokens(start(tea=tea, hands=hands), before, before)
    events = finish_round(
        state, [(0, "C2", "number"), (1, "M4", "suit"), (0, "Z1", "suit"), (1, "Z2", "number")]
    )
    reveal = events[-1]
    assert isinstance(reveal, RoundRevealed), "both qualify, all suits equal: no end yet"
    state = fold([created(), dealt(tea, *hands), *events], seed=SEED)
    after = {**before, "matcha": 1, "chasen": 2}
    assert [o.given for o in reveal.outcomes] == [
        (TokenAward(seat=0, kind="matcha"), TokenAward(seat=1, kind="chasen")),
        (TokenAward(seat=1, kind="matcha"), TokenAward(seat=0, kind="chasen")),
    ]
    state = with_tokens(state, after, after)
    assert state.round == 2 and not state.ended
    events = finish_round(state, [(0, "S3", "number")])  # lone card: a water token
    assert events[-1] == MatchEnded(winner=0, reason="comparison", seed=SEED)


def test_given_a_duel_when_the_second_hand_ends_without_a_winner_then_more_matcha_wins() -> None:
    state = with_tokens(start(DUEL, hand=2), {"matcha": 1}, {"chawan": 2, "chasen": 3})
    log = all_pass(state)
    assert log[-1] == MatchEnded(winner=0, reason="hand_limit", seed=SEED)


def test_given_a_duel_when_the_second_hand_ends_with_equal_suits_then_it_is_a_draw() -> None:
    state = with_tokens(start(DUEL, hand=2), {"water": 2, "chasen": 1}, {"water": 2})
    log = all_pass(state)
    assert log[-1] == MatchEnded(winner=None, reason="hand_limit", seed=SEED)
    final = fold([created(DUEL), dealt(TEA, HAND0, HAND1, hand=2), *log], seed=SEED)
    assert final.ended and final.winner is None and final.end_reason == "hand_limit"


def test_given_a_duel_after_the_first_hand_then_a_second_hand_follows() -> None:
    log = all_pass(start(DUEL, hand=1))
    assert isinstance(log[-1], HandEnded)


def test_given_standard_rules_the_tenth_hand_is_the_last() -> None:
    assert isinstance(all_pass(start(STANDARD, hand=9))[-1], HandEnded)
    state = with_tokens(start(STANDARD, hand=10), {}, {"chashaku": 1})
    assert all_pass(state)[-1] == MatchEnded(winner=1, reason="hand_limit", seed=SEED)


def test_when_a_player_resigns_then_the_opponent_wins_and_the_seed_is_revealed() -> None:
    state, events = play_through(start(), Resign(seat=0))
    assert events == [MatchEnded(winner=1, reason="resigned", seed=SEED)]
    assert state.ended and state.winner == 1 and state.phase == "ended"


def test_given_a_match_without_a_clock_when_a_seat_is_timed_out_then_the_engine_refuses() -> None:
    """Only a clock makes a seat lose on time (RULES §6; timed matches: test_clocks.py)."""
    with pytest.raises(RuleError) as refused:
        time_out(start(), 1, datetime(2026, 12, 1, tzinfo=UTC))
    assert refused.value.code == "match_untimed"
