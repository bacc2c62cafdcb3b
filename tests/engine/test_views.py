"""RULES §8: what each viewer sees, in views and in redacted events."""

import msgspec
from engine_script import SEED, TEA, dealt, given, play_through

from schemas.commands import KeepCards, Pass, PlayCard, Resign
from schemas.events import CardPlayed, CardsKept, HandDealt
from schemas.views import CardPlayedView, CardsKeptView, HandDealtView, MatchView
from service.engine import redact, view

HAND0 = ("M1", "M3", "C2", "S2", "Z1")
HAND1 = ("M4", "C4", "W3", "S3", "Z2")
DEAL = dealt(TEA, HAND0, HAND1)


def test_a_seat_sees_its_own_hand_and_only_the_count_of_the_other() -> None:
    v = view(given(DEAL), 0)
    assert v.seats[0].hand == HAND0
    assert v.seats[1].hand is None and v.seats[1].hand_count == 5
    assert v.set_aside is None and v.seed is None
    assert v.legal_moves[-1] == Pass(seat=0)
    assert len(v.legal_moves) == 11  # five cards x two targets, and pass
    assert b"M4" not in msgspec.json.encode(v)


def test_a_face_down_card_shows_where_it_lies_but_only_its_owner_sees_it() -> None:
    state, _ = play_through(given(DEAL), PlayCard(seat=0, card="M1", target="suit"))
    pair = view(state, "spectator").tatami[0]
    assert pair.suit.occupied == (True, False)
    assert pair.suit.cards == (None, None)
    assert view(state, 0).tatami[0].suit.cards == ("M1", None)
    assert view(state, 1).tatami[0].suit.cards == (None, None)


def test_a_lone_card_stays_hidden_after_the_reveal_while_shown_cards_are_public() -> None:
    state, _ = play_through(
        given(DEAL),
        PlayCard(seat=0, card="M1", target="suit"),
        PlayCard(seat=1, card="M4", target="number"),
        PlayCard(seat=0, card="M3", target="number"),
        Pass(seat=1),
    )
    assert state.round == 2
    spectator = view(state, "spectator")
    number, suit = spectator.last_reveal.outcomes
    assert number.cards == ("M3", "M4") and number.shown
    assert suit.cards == (None, None) and suit.placed == (True, False)
    assert view(state, 0).last_reveal.outcomes[1].cards == ("M1", None)
    assert b"M1" not in msgspec.json.encode(spectator)


def test_the_omniscient_viewer_sees_hands_and_set_aside_but_never_the_seed_before_the_end() -> None:
    v = view(given(DEAL), "omniscient")
    assert v.seats[1].hand == HAND1
    assert v.set_aside == DEAL.set_aside
    assert v.seed is None
    assert v.legal_moves == ()


def test_after_the_match_everyone_sees_everything_including_the_seed() -> None:
    state, _ = play_through(given(DEAL), Resign(seat=0))
    v = view(state, "spectator")
    assert v.seats[0].hand == HAND0 and v.seats[1].hand == HAND1
    assert v.set_aside == DEAL.set_aside
    assert v.seed == SEED
    assert v.result is not None and v.result.winner == 1 and v.result.reason == "resigned"


def test_redacted_events_keep_their_type_tag_and_drop_hidden_cards() -> None:
    hidden = redact(DEAL, 1, match_over=False)
    assert isinstance(hidden, HandDealtView)
    assert hidden.hands == (None, HAND1) and hidden.hand_counts == (5, 5)
    assert hidden.set_aside is None
    assert msgspec.json.decode(msgspec.json.encode(hidden))["type"] == "hand_dealt"
    played = CardPlayed(seat=0, hand=1, round=1, card="M1", target="suit")
    assert redact(played, "spectator", match_over=False) == CardPlayedView(
        seat=0, hand=1, round=1, target="suit", card=None
    )
    assert redact(played, "spectator", match_over=True).card == "M1"
    assert redact(played, "spectator", match_over=True, hide_hands_in_replay=True).card is None
    kept = CardsKept(seat=1, hand=1, cards=("M4",))
    assert redact(kept, 0, match_over=False) == CardsKeptView(
        seat=1, hand=1, count=None, cards=None
    )
    assert redact(kept, 1, match_over=False).cards == ("M4",)
    assert isinstance(redact(HandDealt(**msgspec.structs.asdict(DEAL)), "omniscient",
                             match_over=False), HandDealtView)  # fmt: skip


def test_keep_choices_stay_secret_until_the_deal_shows_the_counts() -> None:
    state = given(DEAL)
    while state.phase == "playing":
        state, _ = play_through(state, Pass(seat=state.to_move))
    state, _ = play_through(state, KeepCards(seat=0, cards=("M1", "Z1")))
    assert view(state, 1).seats[0].kept_count is None
    assert view(state, 0).seats[0].kept == ("M1", "Z1")
    assert view(state, 1).must_keep and not view(state, 0).must_keep
    state, _ = play_through(state, KeepCards(seat=1, cards=()))
    after = view(state, 1)
    assert after.seats[0].kept_count == 2 and after.seats[0].kept is None


def test_a_view_round_trips_through_json() -> None:
    v = view(given(DEAL), 0)
    assert msgspec.json.decode(msgspec.json.encode(v), type=MatchView) == v
