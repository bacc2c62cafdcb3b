"""RULES §3, §4, §7: turn order, automatic passes, keeping cards, refilling, dealers."""

from engine_script import TEA, dealt, finish_round, given, play_through, when

from schemas.commands import KeepCards, Pass, PlayCard
from schemas.events import CardPlayed, CardsKept, HandDealt, HandEnded, Passed, RoundRevealed
from service.engine import State, fold, legal_moves

HAND0 = ("M1", "M3", "C2", "S2", "Z1")
HAND1 = ("M4", "C4", "W3", "S3", "Z2")


def all_pass_to_hand_end(state: State) -> tuple[State, list]:
    """Every seat passes every round: the hand ends with no tokens given."""
    log: list = []
    while state.phase == "playing":
        assert state.to_move is not None
        state, events = play_through(state, Pass(seat=state.to_move))
        log.extend(events)
    return state, log


def test_given_a_new_hand_then_the_dealer_moves_first() -> None:
    state = given(dealt(TEA, HAND0, HAND1, dealer=1))
    assert state.to_move == 1
    assert [m for m in legal_moves(state, 0)] == []


def test_given_the_non_dealer_moved_last_in_round_one_then_the_dealer_still_opens_round_two() -> (
    None
):
    state = given(dealt(TEA, HAND0, HAND1, dealer=0))
    state, log = play_through(
        state,
        Pass(seat=0),
        PlayCard(seat=1, card="M4", target="number"),
        Pass(seat=1),
    )
    assert isinstance(log[-1], RoundRevealed)
    assert state.round == 2
    assert state.to_move == 0
    assert state.passed == (False, False)


def test_given_a_player_passed_then_the_other_keeps_taking_turns() -> None:
    state = given(dealt(TEA, HAND0, HAND1))
    state, _ = play_through(state, Pass(seat=0), PlayCard(seat=1, card="M4", target="number"))
    assert state.to_move == 1


def test_given_both_targets_hold_my_card_then_i_pass_automatically() -> None:
    state = given(dealt(TEA, HAND0, HAND1))
    events = when(
        state,
        PlayCard(seat=0, card="M1", target="number"),
        Pass(seat=1),
        PlayCard(seat=0, card="M3", target="suit"),
    )
    assert events[0] == CardPlayed(seat=0, hand=1, round=1, card="M3", target="suit")
    assert events[1] == Passed(seat=0, hand=1, round=1, automatic=True)
    assert isinstance(events[2], RoundRevealed)


def test_given_an_empty_hand_then_that_player_passes_automatically_on_its_turn() -> None:
    state = given(dealt(TEA, HAND0, HAND1))
    # Seat 0 plays out its five cards over rounds 1-3 while seat 1 passes.
    state, _ = play_through(
        state,
        PlayCard(seat=0, card="M1", target="number"), Pass(seat=1),
        PlayCard(seat=0, card="M3", target="suit"),
    )  # fmt: skip
    state, _ = play_through(
        state,
        PlayCard(seat=0, card="C2", target="number"), Pass(seat=1),
        PlayCard(seat=0, card="S2", target="suit"),
    )  # fmt: skip
    assert state.round == 3
    state, _ = play_through(state, PlayCard(seat=0, card="Z1", target="number"))
    assert state.hands[0] == ()
    events = when(state, PlayCard(seat=1, card="M4", target="number"))
    assert events == [
        CardPlayed(seat=1, hand=1, round=3, card="M4", target="number"),
        Passed(seat=0, hand=1, round=3, automatic=True),
    ]


def test_given_the_hand_ends_when_one_keeps_a_subset_and_the_other_none_then_both_refill_to_5() -> (
    None
):
    state = given(dealt(TEA, HAND0, HAND1, dealer=0))
    state, log = all_pass_to_hand_end(state)
    assert isinstance(log[-1], HandEnded)
    assert state.phase == "keeping"
    assert legal_moves(state, 0) == [
        KeepCards(seat=0, cards=()),
        KeepCards(seat=0, cards=HAND0),
    ]
    state, events = play_through(state, KeepCards(seat=0, cards=("Z1", "M3")))
    assert events == [CardsKept(seat=0, hand=1, cards=("M3", "Z1"))]
    events = when(state, KeepCards(seat=1, cards=()))
    assert events[0] == CardsKept(seat=1, hand=1, cards=())
    deal = events[1]
    assert isinstance(deal, HandDealt)
    assert deal.hand == 2
    assert deal.dealer == 1, "the other player deals the next hand"
    assert deal.hands[0][:2] == ("M3", "Z1"), "kept cards stay first in their owner's hand"
    assert [len(h) for h in deal.hands] == [5, 5]
    assert len(deal.set_aside) == 2
    cards = [c for p in deal.tea for c in (p.number, p.suit)]
    assert sorted([*cards, *deal.hands[0], *deal.hands[1], *deal.set_aside]) == sorted(
        ["M1", "M2", "M3", "M4", "C1", "C2", "C3", "C4", "W1", "W2", "W3", "W4",
         "S1", "S2", "S3", "S4", "Z1", "Z2"]
    )  # fmt: skip
    assert not any(c.startswith("Z") for c in cards), "tea cards are never zero cards"


def test_given_dealers_alternate_over_three_hands() -> None:
    state = given(dealt(TEA, HAND0, HAND1, dealer=0))
    dealers = [state.dealer]
    for _ in range(2):
        state, _ = all_pass_to_hand_end(state)
        state, _ = play_through(state, KeepCards(seat=0, cards=()), KeepCards(seat=1, cards=()))
        dealers.append(state.dealer)
    assert dealers == [0, 1, 0]
    assert state.hand == 3


def test_given_nobody_holds_a_card_at_the_hand_end_then_the_next_hand_is_dealt_at_once() -> None:
    # Each seat plays all five cards: 2 + 2 + 1.
    state = given(dealt(TEA, HAND0, HAND1, dealer=0))
    _, log = play_through(
        state,
        PlayCard(seat=0, card="M1", target="number"), PlayCard(seat=1, card="M4", target="number"),
        PlayCard(seat=0, card="M3", target="suit"), PlayCard(seat=1, card="C4", target="suit"),
        PlayCard(seat=0, card="C2", target="number"), PlayCard(seat=1, card="W3", target="number"),
        PlayCard(seat=0, card="S2", target="suit"), PlayCard(seat=1, card="S3", target="suit"),
        PlayCard(seat=0, card="Z1", target="number"), PlayCard(seat=1, card="Z2", target="number"),
    )  # fmt: skip
    ended = [i for i, e in enumerate(log) if isinstance(e, HandEnded)]
    assert len(ended) == 1
    after = log[ended[0] + 1 :]
    assert isinstance(after[0], HandDealt)
    assert after[0].hand == 2
    assert not any(isinstance(e, CardsKept) for e in log)


def test_given_a_hand_when_folded_again_then_the_state_is_the_same() -> None:
    state = given(dealt(TEA, HAND0, HAND1))
    state, log = play_through(state, PlayCard(seat=0, card="M1", target="number"))
    events = finish_round(state, [])
    assert fold([*_prefix(), *log, *events]).version == len(_prefix()) + len(log) + len(events)


def _prefix() -> list:
    from engine_script import created

    return [created(), dealt(TEA, HAND0, HAND1)]
