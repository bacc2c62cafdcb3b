"""Hypothesis properties over whole random matches, both rulesets.

Each example plays a match between two bots through the public ``step``
(decide + the new state) and checks the invariants at every step.
"""

import random
from collections import Counter

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.cards import ALL_CARDS, TOKEN_KINDS, Card
from schemas.commands import StartMatch
from schemas.events import CardPlayed, CardsKept, Event, HandDealt, MatchEnded, RoundRevealed
from schemas.rules import DUEL, STANDARD, Ruleset
from service.bots import heuristic_bot, random_bot
from service.engine import State, check_deals, fold, initial_state, redact, step, view
from service.engine.state import slot
from service.engine.turns import must_keep

encode = msgspec.json.encode
BOTS = {"random": random_bot, "heuristic": heuristic_bot}


def where_cards_are(state: State) -> list[Card]:
    tea = [c for pair in state.tea for c in (pair.number, pair.suit)]
    placed = [c for c in state.placed if c is not None]
    return [*tea, *state.hands[0], *state.hands[1], *placed, *state.set_aside]


def hidden_from(state: State, viewer: int | str) -> set[Card]:
    """Cards RULES §8 hides from a seat or a live spectator right now."""
    last = state.last_reveal.round if state.last_reveal else 0
    hidden: set[Card] = set(state.set_aside)
    for seat in (0, 1):
        if viewer == seat:
            continue
        hidden |= set(state.hands[seat])
        for round_no in (1, 2, 3):
            for target in (0, 1):
                mine = state.placed[slot(round_no, seat, target)]
                theirs = state.placed[slot(round_no, 1 - seat, target)]
                shown = round_no <= last and theirs is not None
                if mine is not None and not shown:
                    hidden.add(mine)
    return hidden


def hidden_in_event(event: Event, viewer: int | str) -> set[Card]:
    match event:
        case HandDealt():
            cards = set(event.set_aside)
            for seat in (0, 1):
                if viewer != seat:
                    cards |= set(event.hands[seat])
            return cards
        case CardPlayed():
            return set() if viewer == event.seat else {event.card}
        case RoundRevealed():
            return {
                card
                for o in event.outcomes
                if not o.shown
                for seat, card in enumerate(o.cards)
                if card is not None and viewer != seat
            }
        case CardsKept():
            return set() if viewer == event.seat else set(event.cards)
    return set()


def assert_hides(data: bytes, cards: set[Card], what: str) -> None:
    leaked = sorted(c for c in cards if c.encode() in data)
    assert not leaked, f"{what} shows hidden cards {leaked}"


def play(seed: int, ruleset: Ruleset, bots: tuple[str, str]) -> tuple[State, list[Event], str]:
    rng = random.Random(seed)
    shuffle_seed = rng.getrandbits(256).to_bytes(32, "big").hex()
    start = StartMatch(
        match_id="prop", players=("p0", "p1"), ruleset=ruleset,
        first_dealer=rng.choice((0, 1)), seed=shuffle_seed,
    )  # fmt: skip
    state, log = step(initial_state(), start)
    checks(state, log)
    while not state.ended:
        seat = state.to_move
        if seat is None:
            seat = 0 if must_keep(state, 0) else 1
        state, events = step(state, BOTS[bots[seat]](state, seat, rng))
        checks(state, events)
        log.extend(events)
    return state, log, shuffle_seed


def checks(state: State, new_events: list[Event]) -> None:
    # Every card is in exactly one place.
    assert sorted(where_cards_are(state)) == sorted(ALL_CARDS)
    # Tokens never exceed the supply.
    for kind in TOKEN_KINDS:
        assert state.tokens[0][kind] + state.tokens[1][kind] <= state.ruleset.token_supply
    assert state.hand <= state.ruleset.max_hands
    if state.ended:
        return
    for viewer in (0, 1, "spectator"):
        assert_hides(encode(view(state, viewer)), hidden_from(state, viewer), f"view of {viewer}")
        for event in new_events:
            redacted = encode(redact(event, viewer, match_over=False))
            assert_hides(redacted, hidden_in_event(event, viewer), f"{event} for {viewer}")


RULESETS = {"standard": STANDARD, "duel": DUEL}


@pytest.mark.parametrize("ruleset", ["standard", "duel"])
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**64),
    bots=st.tuples(st.sampled_from(sorted(BOTS)), st.sampled_from(sorted(BOTS))),
)
def test_whole_random_matches_keep_every_invariant(
    ruleset: str, seed: int, bots: tuple[str, str]
) -> None:
    rules = RULESETS[ruleset]
    final, log, shuffle_seed = play(seed, rules, bots)
    # Every match ends within the hand limit, with exactly one MatchEnded, last.
    assert final.ended and final.hand <= rules.max_hands
    assert isinstance(log[-1], MatchEnded)
    assert Counter(type(e) for e in log)[MatchEnded] == 1
    # Folding the log again gives the same state (with or without the seed).
    assert fold(log) == final
    assert fold(log, seed=shuffle_seed) == final
    # The revealed seed re-derives every deal.
    assert log[-1].seed == shuffle_seed
    assert check_deals(log, shuffle_seed) == []
    # The replay: everyone sees everything, the seed included...
    replay = view(final, "spectator")
    assert replay.seed == shuffle_seed
    assert replay.seats[0].hand == final.hands[0]
    assert replay.set_aside == final.set_aside
    # ...unless the ladder keeps hands hidden in replays: then the seed, which would
    # re-deal every hand, is hidden too, from all but an administrator.
    hidden = view(final, 1, hide_hands_in_replay=True)
    assert hidden.seed is None
    assert view(final, "omniscient", hide_hands_in_replay=True).seed == shuffle_seed
    assert shuffle_seed not in encode(hidden).decode()
    assert_hides(encode(hidden), set(final.hands[0]) | set(final.set_aside), "hidden replay")
    for event in log:
        data = encode(redact(event, "spectator", match_over=True, hide_hands_in_replay=True))
        assert_hides(data, hidden_in_event(event, "spectator"), "hidden replay event")
        assert shuffle_seed.encode() not in data, "a hidden replay event shows the seed"
