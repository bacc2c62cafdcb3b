"""RULES §2, §4, §5: every row of the reveal table, cyclic rank, zero cards, token supply."""

from engine_script import TEA, dealt, finish_round, given, when, with_tokens

from schemas.commands import Pass
from schemas.events import RoundRevealed, TargetOutcome, TokenAward


def reveal_of(events: list) -> RoundRevealed:
    reveals = [e for e in events if isinstance(e, RoundRevealed)]
    assert len(reveals) == 1
    return reveals[0]


def round_one(hand0, hand1, plays, tea=TEA) -> RoundRevealed:
    """Deal, play ``plays`` (seat, card, target) in order from dealer 0, then both pass."""
    state = given(dealt(tea, hand0, hand1))
    return reveal_of(finish_round(state, plays))


def test_given_no_card_beside_a_target_when_revealed_then_nothing_happens() -> None:
    reveal = reveal_of(
        when(given(dealt(TEA, ("M1", "M3", "C2", "S2", "Z1"), ("M4", "C4", "W3", "S3", "Z2"))),
             Pass(seat=0), Pass(seat=1))
    )  # fmt: skip
    assert reveal.outcomes == (
        TargetOutcome(target="number", tea_card="M2", cards=(None, None), shown=False,
                      matched=(None, None), winner=None, due=(), given=()),
        TargetOutcome(target="suit", tea_card="C3", cards=(None, None), shown=False,
                      matched=(None, None), winner=None, due=(), given=()),
    )  # fmt: skip


def test_given_a_lone_card_that_does_not_match_then_it_wins_the_tea_suit_token_unseen() -> None:
    reveal = round_one(
        ("M1", "M3", "C2", "S2", "Z1"), ("M4", "C4", "W3", "S3", "Z2"),
        [(0, "M3", "number")],
    )  # fmt: skip
    number = reveal.outcomes[0]
    assert number.winner == 0
    assert number.shown is False
    assert number.matched == (None, None)
    assert number.due == number.given == (TokenAward(seat=0, kind="matcha"),)


def test_given_a_lone_zero_card_when_revealed_then_it_still_wins_and_no_chasen_is_given() -> None:
    reveal = round_one(
        ("M1", "M3", "C2", "S2", "Z1"), ("M4", "C4", "W3", "S3", "Z2"), [(0, "Z1", "suit")]
    )
    suit = reveal.outcomes[1]
    assert suit.winner == 0
    assert suit.given == (TokenAward(seat=0, kind="chawan"),)


def test_given_both_cards_match_a_number_target_then_the_higher_suit_alone_wins() -> None:
    # number tea M2: C2 (chawan) beats W2 (water)
    reveal = round_one(
        ("C2", "M1", "M3", "S3", "Z1"), ("W2", "M4", "C4", "W3", "Z2"),
        [(0, "C2", "number"), (1, "W2", "number")],
        tea=(("M2", "C3"), ("W4", "S1"), ("C1", "S2")),
    )  # fmt: skip
    number = reveal.outcomes[0]
    assert number.shown is True
    assert number.matched == (True, True)
    assert number.winner == 0
    assert number.given == (TokenAward(seat=0, kind="matcha"),)


def test_given_both_match_a_number_target_then_chashaku_beats_matcha() -> None:
    # number tea C2: seat 1's S2 (chashaku) beats seat 0's M2 (matcha): the cycle
    reveal = round_one(
        ("M2", "M1", "M3", "S3", "Z1"), ("S2", "M4", "C4", "W3", "Z2"),
        [(0, "M2", "number"), (1, "S2", "number")],
        tea=(("C2", "C3"), ("W4", "S1"), ("C1", "W2")),
    )  # fmt: skip
    assert reveal.outcomes[0].winner == 1
    assert reveal.outcomes[0].given == (TokenAward(seat=1, kind="chawan"),)


def test_given_both_match_a_number_target_then_matcha_beats_water() -> None:
    reveal = round_one(
        ("W3", "M1", "M2", "S2", "Z1"), ("M3", "M4", "C4", "S3", "Z2"),
        [(0, "W3", "number"), (1, "M3", "number")],
        tea=(("C3", "C2"), ("W4", "S1"), ("C1", "W2")),
    )  # fmt: skip
    assert reveal.outcomes[0].winner == 1


def test_given_both_cards_match_a_suit_target_then_1_beats_4() -> None:
    # suit tea M2: seat 0's M1 beats seat 1's M4
    reveal = round_one(
        ("M1", "C2", "M3", "S3", "Z1"), ("M4", "W2", "C4", "W3", "Z2"),
        [(0, "M1", "suit"), (1, "M4", "suit")],
        tea=(("C3", "M2"), ("W4", "S1"), ("C1", "S2")),
    )  # fmt: skip
    suit = reveal.outcomes[1]
    assert suit.matched == (True, True)
    assert suit.winner == 0
    assert suit.given == (TokenAward(seat=0, kind="matcha"),)


def test_given_both_cards_match_a_suit_target_then_the_higher_rank_wins() -> None:
    reveal = round_one(
        ("M3", "C2", "M1", "S3", "Z1"), ("M4", "W2", "C4", "W3", "Z2"),
        [(0, "M3", "suit"), (1, "M4", "suit")],
        tea=(("C3", "M2"), ("W4", "S1"), ("C1", "S2")),
    )  # fmt: skip
    assert reveal.outcomes[1].winner == 1


def test_given_one_card_matches_then_it_wins_the_token_and_the_other_player_gets_a_chasen() -> None:
    reveal = round_one(
        ("M1", "C2", "M3", "S3", "Z1"), ("M4", "W3", "C4", "S2", "Z2"),
        [(0, "C2", "suit"), (1, "W3", "suit")],
    )  # fmt: skip
    suit = reveal.outcomes[1]
    assert suit.shown is True
    assert suit.matched == (True, False)
    assert suit.winner == 0
    assert suit.given == (TokenAward(seat=0, kind="chawan"), TokenAward(seat=1, kind="chasen"))


def test_given_a_zero_card_against_a_matching_card_then_the_zero_card_earns_the_chasen() -> None:
    reveal = round_one(
        ("M1", "C2", "M3", "S3", "Z1"), ("M4", "W3", "C4", "S2", "Z2"),
        [(0, "Z1", "number"), (1, "S2", "number")],
    )  # fmt: skip
    number = reveal.outcomes[0]
    assert number.matched == (False, True)
    assert number.given == (TokenAward(seat=1, kind="matcha"), TokenAward(seat=0, kind="chasen"))


def test_given_neither_card_matches_then_both_are_shown_and_nobody_gets_anything() -> None:
    reveal = round_one(
        ("M1", "C2", "M3", "S3", "Z1"), ("M4", "W3", "C4", "S2", "Z2"),
        [(0, "M3", "number"), (1, "Z2", "number")],
    )  # fmt: skip
    number = reveal.outcomes[0]
    assert number.shown is True
    assert number.matched == (False, False)
    assert number.winner is None
    assert number.due == number.given == ()


def test_given_the_matcha_supply_runs_out_then_the_token_is_due_but_not_given() -> None:
    # Both tea cards of round 1 are matcha: two matcha tokens at stake, one left.
    tea = (("M2", "M3"), ("W4", "S1"), ("C1", "W2"))
    state = with_tokens(
        given(dealt(tea, ("M1", "C2", "C3", "S3", "Z1"), ("M4", "W1", "C4", "W3", "Z2"))),
        {"matcha": 3}, {"matcha": 3},
    )  # fmt: skip
    events = finish_round(state, [(0, "Z1", "number"), (1, "Z2", "suit")])
    number, suit = reveal_of(events).outcomes
    assert number.given == (TokenAward(seat=0, kind="matcha"),)
    assert suit.due == (TokenAward(seat=1, kind="matcha"),)
    assert suit.given == ()
