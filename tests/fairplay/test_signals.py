"""The column-wise signals (service/fairplay/signals.py) agree, flag for flag,
with the same definitions written as plain loops (reference_signals.py), on
simulated ladders with and without planted cases and under other thresholds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import reference_signals
from ladder_sim import build

from schemas.fairplay import DEFAULT_FAIRPLAY, FairPlaySettings
from service.fairplay.games import Game
from service.fairplay.signals import flags_of_ladder
from service.ratings.elo import EloSettings

TIGHT = FairPlaySettings(
    min_pair_games=2,
    pair_share=0.05,
    one_sided=0.6,
    early_moves=1,
    min_early_ends=1,
    rating_from_one=30.0,
    streak_losses=3,
    streak_drop=30.0,
    streak_peak_above=0.0,
    created_within_hours=24 * 400,
    new_accounts_share=0.05,
    fast_move_s=0.3,
    fast_share=0.05,
    min_fast_moves=5,
    window_days=10,
)
"""Thresholds low enough that many honest bots are flagged: both sides must agree
on hundreds of flags, not only on the planted few."""


@pytest.mark.parametrize(
    ("seed", "plant", "settings"),
    [(11, True, DEFAULT_FAIRPLAY), (12, False, DEFAULT_FAIRPLAY), (13, True, TIGHT)],
)
def test_given_a_simulated_ladder_the_columns_and_the_reference_raise_the_same_flags(
    seed: int, plant: bool, settings: FairPlaySettings
) -> None:
    ladder = build(seed, honest=150, games_each=30, plant=plant)
    elo = EloSettings(k_new=32)

    fast = flags_of_ladder("L", ladder.games, settings, elo, ladder.accounts)
    slow = reference_signals.flags_of_ladder("L", ladder.games, settings, elo, ladder.accounts)

    assert len(slow) >= (50 if settings is TIGHT else 8 if plant else 0)
    assert [f.flag_id for f in fast] == [f.flag_id for f in slow]
    for a, b in zip(fast, slow, strict=True):
        assert a.numbers == pytest.approx(b.numbers, abs=1e-6), a.signal
        assert a.matches == b.matches, a.signal
        assert a.weight == pytest.approx(b.weight, abs=1e-6)


def test_given_resignations_seconds_after_the_start_they_are_early_by_the_clock() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    games = [
        Game(
            match_id=f"m{i}",
            players=("fed", "feeder"),
            started_at=start + timedelta(hours=i),
            ended_at=start + timedelta(hours=i, seconds=seconds),
            position=i + 1,
            winner=0,
            reason="resigned",
            cards_played=12,
        )
        for i, seconds in enumerate([10.0] * 5 + [600.0] * 3)
    ]
    settings = FairPlaySettings(min_early_ends=5, early_seconds=30.0)

    flags = [
        f for f in flags_of_ladder("L", games, settings, EloSettings()) if f.signal == "early_ends"
    ]

    (flag,) = flags
    assert flag.matches == ("m0", "m1", "m2", "m3", "m4")
    assert flag.numbers["longest_s"] == 10.0 and flag.numbers["most_cards_played"] == 12
    slower = FairPlaySettings(min_early_ends=5, early_seconds=5.0)
    assert not [
        f for f in flags_of_ladder("L", games, slower, EloSettings()) if f.signal == "early_ends"
    ]
