"""Swiss pairing: the rules the weights encode, checked against every legal pairing."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from tournament_engine import AT, create, finish_all, finish_round, player, send, started_with

from schemas.tournaments import ForbidPairing, PairRound, RecordResult, Swiss
from service.tournaments import swiss
from service.tournaments.decide import seeding_order, swiss_players
from service.tournaments.state import TournamentState, running_games


def matchings(people: Sequence[str]) -> Iterator[list[tuple[str, str]]]:
    """Every way to pair ``people`` (an odd one out is paired with None: the bye)."""
    if not people:
        yield []
        return
    first, rest = people[0], people[1:]
    if len(people) % 2:
        for k in range(len(people)):  # k: who gets the bye
            others = [p for i, p in enumerate(people) if i != k]
            for m in matchings(others):
                yield [*m, (people[k], "")]
        return
    for i, partner in enumerate(rest):
        for m in matchings(rest[:i] + rest[i + 1 :]):
            yield [(first, partner), *m]


def cost(
    pairing: Sequence[tuple[str, str]], players: dict[str, swiss.SwissPlayer]
) -> tuple[int, int, int]:
    """(rematches, the bye's score, sum of squared score differences), half points."""
    rematches = bye = squares = 0
    for a, b in pairing:
        if not b:
            bye = players[a].score
            continue
        rematches += b in players[a].opponents
        squares += (players[a].score - players[b].score) ** 2
    return rematches, bye, squares


def legal(
    pairing: Sequence[tuple[str, str]],
    players: dict[str, swiss.SwissPlayer],
    forbidden: set[frozenset[str]],
) -> bool:
    anyone_without = any(p.can_have_bye for p in players.values())
    for a, b in pairing:
        if not b:
            if anyone_without and not players[a].can_have_bye:
                return False
        elif frozenset((a, b)) in forbidden:
            return False
    return True


@st.composite
def histories(draw: st.DrawFn) -> tuple[TournamentState, int]:
    """A Swiss of 2-9 players some rounds in (random results), with forbidden pairs."""
    n = draw(st.integers(2, 9))
    played = draw(st.integers(0, min(4, n - 1)))
    state = create(Swiss(rounds=played + 1), auto_pair=False)
    state = started_with(state, n)
    for a, b in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3)):
        if a != b:
            state = send(state, ForbidPairing(at=AT, players=(player(a), player(b))))
    for r in range(1, played + 1):
        state = send(state, PairRound(at=AT, round=r))
        for game in running_games(state):
            assert game.match_id is not None
            winner = draw(st.sampled_from([0, 1, None]))
            state = send(
                state,
                RecordResult(at=AT, match_id=game.match_id, winner=winner, reason="qualified"),
            )
    return state, played + 1


@settings(max_examples=150, deadline=None)
@given(history=histories())
def test_the_pairing_is_the_best_legal_one_on_rematches_then_the_bye_then_score_groups(
    history: tuple[TournamentState, int],
) -> None:
    state, round_no = history
    people = swiss_players(state, round_no)
    players = {p.player_id: p for p in people}
    forbidden = {frozenset(pair) for pair in state.forbidden}
    found = swiss.pair(people, order=seeding_order(state), forbidden=state.forbidden)
    ours = [*found.boards, *([(found.bye, "")] if found.bye else [])]
    options = [m for m in matchings(sorted(players)) if legal(m, players, forbidden)]
    if not options:  # the forbidden pairs leave someone unpairable
        assert found.unpaired
        return
    assert not found.unpaired
    assert legal(ours, players, forbidden)
    # no pair meets twice while a legal alternative exists; the bye goes to the
    # lowest score it can; score groups are kept as far as those two allow
    assert cost(ours, players) == min(cost(m, players) for m in options)
    assert sorted(p for pair in ours for p in pair if p) == sorted(players)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 15), seed=st.integers(0, 2**32))
def test_no_player_gets_two_byes_in_a_whole_swiss(n: int, seed: int) -> None:
    rng = random.Random(seed)
    state = started_with(create(Swiss(rounds=n - 1)), n)
    state = finish_all(state, lambda game: rng.choice([0, 1, None]))
    assert state.phase == "finished"
    byes = Counter(b.player_id for round_byes in state.byes.values() for b in round_byes)
    assert set(byes.values()) <= {1}
    if n % 2:
        assert len(byes) == n - 1  # one a round


def test_round_one_pairs_the_top_half_against_the_bottom_half_seats_alternating() -> None:
    state = started_with(create(Swiss(rounds=3)), 8)
    games = sorted(running_games(state), key=lambda g: g.board)
    assert [g.players for g in games] == [
        (player(0), player(4)),
        (player(5), player(1)),
        (player(2), player(6)),
        (player(7), player(3)),
    ]


def test_after_round_one_winners_meet_winners_and_the_higher_ranked_gets_their_seat() -> None:
    state = started_with(create(Swiss(rounds=3)), 8)
    state = finish_round(state, lambda game: 0 if game.players[0] < game.players[1] else 1)
    # p0..p3 won, in seats 0, 1, 0, 1. Rating order (1st v 3rd, 2nd v 4th)
    # ranks above seats, so each pair wants the same seat: the higher-ranked
    # player gets it (p0 had seat 0, now seat 1; p1 had seat 1, now seat 0).
    top = sorted((g for g in running_games(state) if g.board <= 2), key=lambda g: g.board)
    assert [g.players for g in top] == [(player(2), player(0)), (player(1), player(3))]
    # the losers' group likewise: p4..p7 sat 1, 0, 1, 0
    low = sorted((g for g in running_games(state) if g.board > 2), key=lambda g: g.board)
    assert [g.players for g in low] == [(player(4), player(6)), (player(7), player(5))]


def test_a_field_of_more_than_forty_is_paired_as_well_as_by_one_complete_graph() -> None:
    """The chunked solver (``_bracketed``) against the whole graph, round by round."""
    rng = random.Random(11)
    for n in (41, 57, 80):
        state = started_with(
            create(Swiss(rounds=6), auto_pair=False), n, [rng.gauss(1500, 200) for _ in range(n)]
        )
        for r in range(1, 7):
            ranked = swiss.rank(swiss_players(state, r), seeding_order(state))
            graph = swiss._Graph(ranked, state.forbidden)
            whole = swiss._matching(graph.build(None))
            chunked = swiss._bracketed(graph) or whole
            players = {p.player_id: p for p in ranked}

            assert cost(_as_pairs(ranked, chunked), players) == cost(
                _as_pairs(ranked, whole), players
            )
            state = send(state, PairRound(at=AT, round=r))
            state = finish_round(state, lambda game: rng.choice([0, 1, None]))


def _as_pairs(
    ranked: Sequence[swiss.SwissPlayer], matching: set[tuple[int | str, int | str]]
) -> list[tuple[str, str]]:
    out = []
    for u, v in matching:
        if isinstance(u, int) and isinstance(v, int):
            out.append((ranked[u].player_id, ranked[v].player_id))
        else:
            out.append((ranked[u if isinstance(u, int) else int(v)].player_id, ""))
    return out
