"""Illegal commands raise RuleError with a stable code and a sentence that hides nothing."""

import pytest
from engine_script import SEED, TEA, created, dealt, given, play_through

from schemas.commands import KeepCards, Pass, PlayCard, Resign, StartMatch
from schemas.events import MatchAnnulled
from schemas.rules import STANDARD
from service.engine import State, decide, evolve, fold, initial_state
from service.errors import RuleError

HAND0 = ("M1", "M3", "C2", "S2", "Z1")
HAND1 = ("M4", "C4", "W3", "S3", "Z2")


def refused(state: State, command) -> RuleError:
    with pytest.raises(RuleError) as caught:
        decide(state, command)
    error = caught.value
    # The sentence never names a card the asking seat may not see.
    hidden = set(HAND1 if getattr(command, "seat", 0) == 0 else HAND0)
    assert not any(card in error.detail for card in hidden)
    return error


def playing() -> State:
    return given(dealt(TEA, HAND0, HAND1))


def keeping() -> State:
    state = playing()
    while state.phase == "playing":
        assert state.to_move is not None
        state, _ = play_through(state, Pass(seat=state.to_move))
    return state


def test_when_the_seat_not_on_turn_plays_then_not_your_turn() -> None:
    assert refused(playing(), PlayCard(seat=1, card="M4", target="number")).code == "not_your_turn"


def test_when_a_seat_that_passed_plays_then_already_passed() -> None:
    state, _ = play_through(playing(), Pass(seat=0))
    assert refused(state, PlayCard(seat=0, card="M1", target="suit")).code == "already_passed"
    assert refused(state, Pass(seat=0)).code == "already_passed"


def test_when_a_seat_plays_a_card_it_does_not_hold_then_card_not_in_hand() -> None:
    error = refused(playing(), PlayCard(seat=0, card="M4", target="number"))
    assert error.code == "card_not_in_hand"


def test_when_a_seat_plays_twice_beside_one_target_then_target_taken() -> None:
    state, _ = play_through(playing(), PlayCard(seat=0, card="M1", target="number"), Pass(seat=1))
    assert refused(state, PlayCard(seat=0, card="M3", target="number")).code == "target_taken"


def test_when_playing_between_hands_then_wrong_phase() -> None:
    assert refused(keeping(), PlayCard(seat=0, card="M1", target="number")).code == "wrong_phase"
    assert refused(playing(), KeepCards(seat=0, cards=())).code == "wrong_phase"


def test_when_keeping_twice_then_already_kept() -> None:
    state, _ = play_through(keeping(), KeepCards(seat=0, cards=("M1",)))
    assert refused(state, KeepCards(seat=0, cards=())).code == "already_kept"


def test_when_keeping_a_card_not_in_hand_or_twice_then_card_not_keepable() -> None:
    assert refused(keeping(), KeepCards(seat=0, cards=("M4",))).code == "card_not_keepable"
    assert refused(keeping(), KeepCards(seat=0, cards=("M1", "M1"))).code == "card_not_keepable"


def test_when_the_match_is_over_then_match_over() -> None:
    state, _ = play_through(playing(), Resign(seat=1))
    assert refused(state, Pass(seat=0)).code == "match_over"
    assert refused(state, Resign(seat=0)).code == "match_over"


def test_when_the_match_was_annulled_then_match_annulled() -> None:
    state = evolve(playing(), MatchAnnulled(admin="ada", reason="collusion"))
    assert state.annulled and state.winner is None and state.phase == "ended"
    assert refused(state, Pass(seat=0)).code == "match_annulled"


def test_when_no_match_was_created_then_not_started() -> None:
    assert refused(initial_state(), Pass(seat=0)).code == "not_started"


def test_when_the_next_deal_is_due_without_the_seed_then_no_seed() -> None:
    state = fold([created(), dealt(TEA, HAND0, HAND1)])  # folded without the seed
    while state.phase == "playing":
        assert state.to_move is not None
        state, _ = play_through(state, Pass(seat=state.to_move))
    state, _ = play_through(state, KeepCards(seat=0, cards=()))
    assert refused(state, KeepCards(seat=1, cards=())).code == "no_seed"


def test_when_a_match_is_started_twice_then_wrong_phase() -> None:
    start = StartMatch(
        match_id="m", players=("a", "b"), ruleset=STANDARD, first_dealer=0, seed=SEED
    )
    assert refused(playing(), start).code == "wrong_phase"
    bad = StartMatch(match_id="m", players=("a", "b"), ruleset=STANDARD, first_dealer=0, seed="xx")
    assert refused(initial_state(), bad).code == "no_seed"
