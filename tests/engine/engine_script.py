"""Scripted deals for the golden tests: build a state by folding hand-written
events, then ask ``decide`` what a command causes."""

from collections.abc import Iterable

import msgspec

from schemas.cards import ALL_CARDS, Card, Seat, Target
from schemas.commands import Command, Pass, PlayCard
from schemas.events import Event, HandDealt, MatchCreated, RoundRevealed, TeaPair
from schemas.rules import STANDARD, Ruleset
from schemas.views import Tokens
from service.engine import State, commitment, decide, evolve, fold

SEED = "5eed" * 16
"""The seed of every scripted match (its deals after the scripted one come from it)."""


def created(ruleset: Ruleset = STANDARD, first_dealer: Seat = 0) -> MatchCreated:
    return MatchCreated(
        match_id="m-1",
        players=("ann", "bo"),
        ruleset=ruleset,
        first_dealer=first_dealer,
        seed_commitment=commitment(SEED),
    )


def dealt(
    tea: tuple[tuple[Card, Card], tuple[Card, Card], tuple[Card, Card]],
    hand0: tuple[Card, ...],
    hand1: tuple[Card, ...],
    *,
    hand: int = 1,
    dealer: Seat = 0,
) -> HandDealt:
    """A hand dealt as written; the set-aside cards are whatever is left (must be two)."""
    tea_cards = [c for pair in tea for c in pair]
    used = [*tea_cards, *hand0, *hand1]
    assert len(set(used)) == len(used), "a card dealt twice"
    rest = tuple(c for c in ALL_CARDS if c not in used)
    assert len(rest) == 2, f"set-aside must be two cards, not {rest}"
    return HandDealt(
        hand=hand,
        dealer=dealer,
        tea=tuple(TeaPair(number=n, suit=s) for n, s in tea),  # type: ignore[arg-type]
        hands=(hand0, hand1),
        set_aside=rest,
    )


def given(*events: Event, ruleset: Ruleset = STANDARD) -> State:
    """Fold a scripted log (prefixed by a MatchCreated if it has none)."""
    log = list(events)
    if not isinstance(log[0], MatchCreated):
        log.insert(0, created(ruleset))
    return fold(log, seed=SEED)


def with_tokens(state: State, seat0: dict[str, int], seat1: dict[str, int]) -> State:
    """The same state, with the seats holding these tokens (as if earlier reveals gave them)."""
    return msgspec.structs.replace(
        state,
        tokens=(Tokens(**seat0), Tokens(**seat1)),  # type: ignore[arg-type]
    )


def play_through(state: State, *commands: Command) -> tuple[State, list[Event]]:
    """Decide and apply commands one after another: the final state and every event."""
    log: list[Event] = []
    for command in commands:
        events = decide(state, command)
        for event in events:
            state = evolve(state, event)
        log.extend(events)
    return state, log


def when(state: State, *commands: Command) -> list[Event]:
    """Decide each command in turn (applying its events); the events of the last one."""
    for command in commands[:-1]:
        state, _ = play_through(state, command)
    return decide(state, commands[-1])


def finish_round(state: State, plays: Iterable[tuple[Seat, Card, Target]]) -> list[Event]:
    """Play ``plays`` in order, then pass for whoever is to move until the round is revealed."""
    commands = [PlayCard(seat=s, card=c, target=t) for s, c, t in plays]
    state, log = play_through(state, *commands)
    if any(isinstance(e, RoundRevealed) for e in log):
        return log
    while state.phase == "playing" and state.to_move is not None:
        state, events = play_through(state, Pass(seat=state.to_move))
        log.extend(events)
        if any(isinstance(e, RoundRevealed) for e in events):
            break
    return log


def of_type(events: Iterable[Event], kind: type) -> list[Event]:
    return [e for e in events if isinstance(e, kind)]


# A standard deal used by many tests: dealer 0.
#   round 1: number M2 (matcha token), suit C3 (chawan token)
#   round 2: number W4 (water),        suit S1 (chashaku)
#   round 3: number C1 (chawan),       suit W2 (water)
TEA: tuple[tuple[Card, Card], tuple[Card, Card], tuple[Card, Card]] = (
    ("M2", "C3"),
    ("W4", "S1"),
    ("C1", "W2"),
)
