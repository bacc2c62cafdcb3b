"""The round-robin schedule: FIDE's Berger tables, and everyone meets everyone once per cycle."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tournament_engine import create, finish_all, started_with

from schemas.tournaments import RoundRobin
from service.tournaments.berger import berger_table, rounds_in, schedule_round

# FIDE Handbook C.05, Annex 1 (Berger tables), copied as printed: one line per
# round, pairing numbers, the first of each pair with white (here: seat 0).
FIDE = {
    4: """
        1-4 2-3
        4-3 1-2
        2-4 3-1
    """,
    6: """
        1-6 2-5 3-4
        6-4 5-3 1-2
        2-6 3-1 4-5
        6-5 1-4 2-3
        3-6 4-2 5-1
    """,
    8: """
        1-8 2-7 3-6 4-5
        8-5 6-4 7-3 1-2
        2-8 3-1 4-7 5-6
        8-6 7-5 1-4 2-3
        3-8 4-2 5-1 6-7
        8-7 1-6 2-5 3-4
        4-8 5-3 6-2 7-1
    """,
    10: """
        1-10 2-9 3-8 4-7 5-6
        10-6 7-5 8-4 9-3 1-2
        2-10 3-1 4-9 5-8 6-7
        10-7 8-6 9-5 1-4 2-3
        3-10 4-2 5-1 6-9 7-8
        10-8 9-7 1-6 2-5 3-4
        4-10 5-3 6-2 7-1 8-9
        10-9 1-8 2-7 3-6 4-5
        5-10 6-4 7-3 8-2 9-1
    """,
}


def _parse(text: str) -> tuple[tuple[tuple[int, int], ...], ...]:
    return tuple(
        tuple((int(a), int(b)) for a, b in (pair.split("-") for pair in line.split()))
        for line in text.strip().splitlines()
    )


@pytest.mark.parametrize("players", sorted(FIDE))
def test_the_berger_table_for_n_players_is_fides(players: int) -> None:
    assert berger_table(players) == _parse(FIDE[players])


def test_the_second_cycle_plays_the_first_with_the_seats_swapped() -> None:
    assert schedule_round(6, 2, 6) == ((6, 1), (5, 2), (4, 3))
    for r in range(1, 6):
        first = schedule_round(6, 2, r)
        assert schedule_round(6, 2, r + 5) == tuple((b, a) for a, b in first)


@settings(max_examples=40, deadline=None)
@given(players=st.integers(2, 21), cycles=st.sampled_from([1, 2]))
def test_every_player_meets_every_other_exactly_once_per_cycle(players: int, cycles: int) -> None:
    state = started_with(create(RoundRobin(cycles=cycles)), players)
    state = finish_all(state)  # every game drawn, round after round, through the engine
    assert state.phase == "finished"
    assert state.round == rounds_in(players, cycles)
    per_cycle = rounds_in(players, 1)
    for cycle in range(cycles):
        met: Counter[frozenset[str]] = Counter()
        seats: Counter[tuple[str, str]] = Counter()
        for game in state.games.values():
            if cycle * per_cycle < game.round <= (cycle + 1) * per_cycle:
                met[frozenset(game.players)] += 1
                seats[game.players] += 1
        ids = list(state.seeds)
        everyone = {frozenset((a, b)) for i, a in enumerate(ids) for b in ids[i + 1 :]}
        assert set(met) == everyone
        assert set(met.values()) <= {1}
    if cycles == 2:
        # each pair once with each seat order
        orders = Counter(g.players for g in state.games.values())
        assert all(orders[(b, a)] == 1 for (a, b) in orders)
    # an odd field: each player rests exactly once per cycle
    if players % 2:
        rests = Counter(b.player_id for byes in state.byes.values() for b in byes)
        assert set(rests.values()) == {cycles} and len(rests) == players
