"""Positions for the bots' tests: real states reached by bots through the engine."""

from __future__ import annotations

import random
from collections.abc import Callable

from schemas.cards import Card, Seat
from schemas.commands import StartMatch
from schemas.rules import Ruleset
from service.bots import heuristic_bot, random_bot
from service.engine import State, initial_state, step
from service.engine.state import slot
from service.engine.turns import must_keep


def position(
    seed: int,
    ruleset: Ruleset,
    commands: int,
    heuristic: bool = True,
    stop: Callable[[State], bool] | None = None,
) -> State:
    """The state after at most ``commands`` seat commands of a bot match, or the
    first one ``stop`` accepts (never ended: it stops one command before the end)."""
    rng = random.Random(seed)
    start = StartMatch(
        match_id=f"m{seed}",
        players=("p0", "p1"),
        ruleset=ruleset,
        first_dealer=rng.choice((0, 1)),
        seed=rng.getrandbits(256).to_bytes(32, "big").hex(),
    )
    state, _ = step(initial_state(), start)
    bots = (heuristic_bot if heuristic else random_bot, random_bot)
    for _ in range(commands):
        if stop is not None and stop(state):
            break
        seat = mover(state)
        after, _ = step(state, bots[seat](state, seat, rng))
        if after.ended:
            break
        state = after
    return state


def mover(state: State) -> Seat:
    """The seat asked next (between hands seat 0 first, as self-play asks)."""
    if state.to_move is not None:
        return state.to_move
    return 0 if must_keep(state, 0) else 1


def hidden_from(state: State, viewer: int | str) -> set[Card]:
    """The cards RULES §8 hides from a seat or a live spectator, read off the state."""
    last = state.last_reveal.round if state.last_reveal else 0
    hidden: set[Card] = set(state.set_aside)
    for seat in (0, 1):
        if viewer == seat:
            continue
        hidden |= set(state.hands[seat])
        for round_no in (1, 2, 3):
            for target in (0, 1):
                card = state.placed[slot(round_no, seat, target)]
                other = state.placed[slot(round_no, 1 - seat, target)]
                revealed = round_no <= last or state.phase == "keeping"
                if card is not None and not (revealed and other is not None):
                    hidden.add(card)
    return hidden
