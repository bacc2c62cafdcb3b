"""The search bot: legal, reproducible, bounded, and stronger than the heuristic bot."""

from __future__ import annotations

import random

import msgspec
import pytest

from schemas.commands import KeepCards
from schemas.rules import DUEL, STANDARD
from schemas.views import Tokens
from service.bots import heuristic_bot
from service.bots.arena import play_matches, tally
from service.bots.levels import LEVELS, bot_named, search_bot
from service.bots.search import Budget, search
from service.engine import State, legal_moves, step, view
from service.engine.rank import SUIT_OF
from service.engine.selfplay import play_match
from service.engine.state import Board, freeze, slot
from tests.bots.positions import position


def test_the_search_bot_only_ever_plays_legal_moves() -> None:
    bot = search_bot(Budget(playouts=12))
    asked = 0

    def checked(board: Board, seat, rng):
        nonlocal asked
        state = board if isinstance(board, State) else freeze(board)
        command = bot(state, seat, rng)
        if isinstance(command, KeepCards):
            assert set(command.cards) <= set(state.hands[seat])
        else:
            assert command in legal_moves(state, seat)
        asked += 1
        return command

    for ruleset in (STANDARD, DUEL):
        for game in range(6):
            play_match((checked, heuristic_bot), ruleset, random.Random(game))
    assert asked > 60


def test_the_same_view_and_seed_give_the_same_move_and_statistics() -> None:
    seen = view(position(8, STANDARD, 6), position(8, STANDARD, 6).to_move)  # type: ignore[arg-type]
    first = search(seen, Budget(playouts=80), 123)
    again = search(seen, Budget(playouts=80), 123)
    assert (first.command, first.playouts, first.value) == (
        again.command,
        again.playouts,
        again.value,
    )
    assert first.playouts == 80


def test_a_cpu_time_ceiling_stops_a_search_that_would_run_for_ever() -> None:
    seen = view(position(8, STANDARD, 0), position(8, STANDARD, 0).to_move)  # type: ignore[arg-type]
    result = search(seen, Budget(playouts=10**9, max_ms=40), 1)
    assert 0 < result.playouts < 10**9
    assert result.elapsed_ms < 2000


def test_the_search_bot_plays_a_seat_and_only_when_it_has_something_to_do() -> None:
    real = position(2, STANDARD, 3)
    with pytest.raises(ValueError, match="seat"):
        search(view(real, "spectator"), Budget(playouts=5), 0)
    idle = 1 - real.to_move  # type: ignore[operator]
    with pytest.raises(ValueError, match="nothing to do"):
        search(view(real, idle), Budget(playouts=5), 0)  # type: ignore[arg-type]


def a_winning_token_is_on_offer(s: State) -> bool:
    """Seat 0 to move, seat 1 has passed, and a target of a matcha tea card is free."""
    if s.phase != "playing" or s.to_move != 0 or not s.passed[1] or not s.hands[0]:
        return False
    pair = s.tea[s.round - 1]
    return any(
        SUIT_OF[tea] == "matcha" and s.placed[slot(s.round, 0, t)] is None
        for t, tea in enumerate((pair.number, pair.suit))
    )


def test_the_search_takes_the_lone_token_that_wins_the_match_at_once() -> None:
    found = 0
    for seed in range(400):
        s = position(seed, STANDARD, 60, heuristic=False, stop=a_winning_token_is_on_offer)
        if not a_winning_token_is_on_offer(s):
            continue
        # Three matcha tokens: a fourth (a lone card beside a matcha tea card) wins.
        s = msgspec.structs.replace(s, tokens=(Tokens(matcha=3), Tokens(chawan=1)))
        hand = s.hand
        while s.to_move == 0:  # seat 1 has passed: seat 0 plays on until it passes
            result = search(view(s, 0), Budget(playouts=150), seed)
            assert result.value > 0.9
            s, _ = step(s, result.command)
        assert (s.winner, s.end_reason, s.hand) == (0, "qualified", hand)
        found += 1
        if found == 5:
            return
    pytest.fail(f"only {found} positions found")


def test_the_casual_level_beats_the_heuristic_bot_in_most_of_100_duel_matches() -> None:
    t = tally(play_matches("casual", "heuristic", "duel", 100, seed=3, workers=1))
    assert t.score >= 0.65, t


def test_every_level_and_named_bot_can_be_built() -> None:
    for name in [*LEVELS, "random", "heuristic", "search:7"]:
        assert callable(bot_named(name))
    with pytest.raises(ValueError, match="Unknown bot"):
        bot_named("grandmaster")
