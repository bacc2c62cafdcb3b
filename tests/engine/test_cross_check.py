"""The engine and a second, plain implementation of RULES.md (reference_rules.py)
produce the very same events for the same seat commands, over random matches."""

import random

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_rules import Reference

from schemas.events import CardPlayed, CardsKept, MatchCreated, Passed
from schemas.rules import DUEL, STANDARD
from service.bots import heuristic_bot, random_bot
from service.engine.selfplay import play_match


def as_json(value: object) -> object:
    return msgspec.json.decode(msgspec.json.encode(value))


@pytest.mark.parametrize("ruleset", [STANDARD, DUEL], ids=["standard", "duel"])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**64), heuristic=st.booleans())
def test_the_engine_and_the_reference_agree_on_every_event(ruleset, seed, heuristic) -> None:
    bots = (heuristic_bot if heuristic else random_bot, random_bot)
    _, log = play_match(bots, ruleset, random.Random(seed))
    created = log[0]
    assert isinstance(created, MatchCreated)
    reference = Reference(
        msgspec.to_builtins(ruleset),
        created.first_dealer,
        log[-1].seed,  # type: ignore[union-attr]
    )
    for event in log:
        match event:
            case CardPlayed():
                reference.play(event.seat, event.card, event.target)
            case Passed(automatic=False):
                reference.pass_(event.seat)
            case CardsKept():
                reference.keep(event.seat, list(event.cards))
    assert reference.events == as_json(log[1:])
