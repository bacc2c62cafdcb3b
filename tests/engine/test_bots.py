"""The heuristic bot beats the random one clearly, in both rulesets (fixed rng seeds)."""

import random

import pytest

from schemas.rules import DUEL, STANDARD
from service.bots import heuristic_bot, random_bot
from service.engine import legal_moves
from service.engine.selfplay import play_match


@pytest.mark.parametrize("ruleset", [STANDARD, DUEL], ids=["standard", "duel"])
def test_the_heuristic_bot_wins_clearly_more_than_half_of_1000_matches_against_random(
    ruleset,
) -> None:
    rng = random.Random(2026)
    wins = 0
    for game in range(1000):
        heuristic_seat = game % 2  # each bot takes each seat half the time
        players = (
            (heuristic_bot, random_bot) if heuristic_seat == 0 else (random_bot, heuristic_bot)
        )
        final, _ = play_match(players, ruleset, rng)
        wins += final.winner == heuristic_seat
    assert wins > 600, f"{wins}/1000"


def test_the_random_bot_only_ever_plays_legal_moves() -> None:
    rng = random.Random(1)
    seen = 0

    def checked(state, seat, rng):
        nonlocal seen
        command = random_bot(state, seat, rng)
        moves = legal_moves(state, seat)
        if state.phase == "playing":
            assert command in moves
        else:
            assert set(command.cards) <= set(state.hands[seat])
        seen += 1
        return command

    for _ in range(50):
        play_match((checked, checked), STANDARD, rng)
    assert seen > 1000
