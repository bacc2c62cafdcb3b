"""Glicko-2 against Glickman's worked example, RD growth while idle, and the fast
recompute against the reference ladder bit for bit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.ratings import glicko2
from service.ratings.glicko2 import Glicko2Ratings, Glicko2Settings
from workers.ratings.codes import code_of
from workers.ratings.elo_fold import Roster
from workers.ratings.glicko2_fold import Boundary, history_columns, rate_periods, table_row

# Mark Glickman, "Example of the Glicko-2 system" (glicko.net, 2013): a player
# rated 1500, RD 200, volatility 0.06, tau 0.5, plays 1400 (RD 30, won),
# 1550 (RD 100, lost) and 1700 (RD 300, lost) in one rating period.
OPPONENTS = [(1400.0, 30.0, 1.0), (1550.0, 100.0, 0.0), (1700.0, 300.0, 0.0)]


def close_to(value: float, printed: float, decimals: int) -> bool:
    """``value`` agrees with the paper's ``printed`` figure to the digits it prints."""
    return abs(value - printed) <= 0.5 * 10.0**-decimals + 1e-12


def test_step_2_converts_ratings_and_rds_to_the_glicko_2_scale() -> None:
    assert glicko2.mu_of(1500.0) == 0.0
    assert close_to(glicko2.phi_of(200.0), 1.1513, 4)
    assert [round(glicko2.mu_of(r), 4) for r, _, _ in OPPONENTS] == [-0.5756, 0.2878, 1.1513]
    assert [round(glicko2.phi_of(rd), 4) for _, rd, _ in OPPONENTS] == [0.1727, 0.5756, 1.7269]


def test_step_3_g_and_e_of_each_opponent_are_the_papers() -> None:
    gs = [glicko2.g(glicko2.phi_of(rd)) for _, rd, _ in OPPONENTS]
    es = [
        glicko2.expected(0.0, glicko2.mu_of(r), gj)
        for (r, _, _), gj in zip(OPPONENTS, gs, strict=True)
    ]
    assert [round(x, 4) for x in gs] == [0.9955, 0.9531, 0.7242]
    assert [round(x, 3) for x in es] == [0.639, 0.432, 0.303]


# The paper carries its figures rounded from step to step (E to three digits):
# each step below starts from the paper's printed inputs, as the paper does.
PAPER_G = (0.9955, 0.9531, 0.7242)
PAPER_E = (0.639, 0.432, 0.303)
PAPER_S = (1.0, 0.0, 0.0)


def test_step_3_v_is_the_papers() -> None:
    v_sum = sum(glicko2.v_term(gj, e) for gj, e in zip(PAPER_G, PAPER_E, strict=True))
    assert close_to(1.0 / v_sum, 1.7785, 4)


def test_step_4_delta_is_the_papers() -> None:
    d_sum = sum(
        glicko2.delta_term(gj, s, e) for gj, s, e in zip(PAPER_G, PAPER_S, PAPER_E, strict=True)
    )
    assert close_to(d_sum, -0.2718, 4)  # the bracket: 0.3594 - 0.4117 - 0.2194
    assert close_to(1.7785 * d_sum, -0.4834, 4)


def test_step_5_the_illinois_iteration_gives_the_papers_new_volatility() -> None:
    # the paper prints sigma' = 0.05999 cut to five digits (it is 0.0599960)
    sigma = glicko2.new_volatility(1.1513, 0.06, 1.7785, -0.4834, 0.5)
    assert 0.05999 <= sigma < 0.06000 and round(sigma, 7) == 0.059996


def test_steps_6_to_8_phi_star_phi_prime_mu_prime_and_back_to_the_rating_scale() -> None:
    phi_star = math.sqrt(1.1513**2 + 0.05999**2)
    assert close_to(phi_star, 1.152862, 6)
    phi_new = 1.0 / math.sqrt(1.0 / 1.152862**2 + 1.0 / 1.7785)
    assert close_to(phi_new, 0.8722, 4)
    # mu' = 0 + 0.8722^2 (-0.2720) as the paper prints it
    assert close_to(0.0 + 0.8722**2 * -0.2720, -0.2069, 4)
    assert close_to(glicko2.rating_of(-0.2069), 1464.06, 2)
    assert close_to(glicko2.rd_of(0.8722), 151.52, 2)


def test_the_whole_update_in_exact_arithmetic_lands_on_the_papers_result() -> None:
    # Unrounded, E is 0.63947, 0.43184, 0.30284: v 1.77898 (the paper's 1.7785
    # comes from E rounded to three digits) and r' 1464.0507, not 1464.06.
    ladder = Glicko2Ratings(Glicko2Settings(initial_volatility=0.06, tau=0.5, initial_rd=200.0))
    ladder.players["opp0"] = _fixed("opp0", 1400.0, 30.0)
    ladder.players["opp1"] = _fixed("opp1", 1550.0, 100.0)
    ladder.players["opp2"] = _fixed("opp2", 1700.0, 300.0)
    for k, (_, _, score) in enumerate(OPPONENTS):
        ladder.rate(f"m{k}", k + 1, "me", f"opp{k}", score, clock_period=7)
    me = ladder.players["me"]
    assert abs(me.rating - 1464.06) < 0.02 and round(me.rating, 4) == 1464.0507
    assert close_to(me.rd, 151.52, 2)
    assert 0.05999 <= me.volatility < 0.06000
    u = glicko2.update(0.0, glicko2.phi_of(200.0), 0.06, 1 / 1.7789770897, me.d_sum, 0.5)
    assert close_to(u.delta, -0.4839, 4) and close_to(u.phi_star, 1.152855, 6)
    # all three games share the period's before and after
    mine = [e for e in ladder.history if e.player_id == "me"]
    assert {(e.before, e.after, e.rd_after, e.period) for e in mine} == {
        (1500.0, me.rating, me.rd, 7)
    }


def _fixed(player_id: str, rating: float, rd: float) -> glicko2.PlayerState:
    """An opponent entering the period at ``rating`` and ``rd`` (as stored, no idle growth)."""
    return glicko2.PlayerState(
        player_id=player_id,
        rating=rating,
        rd=rd,
        volatility=0.06,
        peak=rating,
        period=None,
        base_rating=rating,
        base_rd=rd,
        base_volatility=0.06,
    )


def test_a_player_who_skips_periods_sees_only_their_rd_grow_capped_at_the_largest() -> None:
    s = Glicko2Settings(initial_rd=200.0, max_rd=250.0)
    ladder = Glicko2Ratings(s)
    ladder.rate("m1", 1, "ann", "bob", 1.0, clock_period=100)
    ann = ladder.players["ann"]
    rating, rd, sigma = ann.rating, ann.rd, ann.volatility
    # bob and cat play on; ann sits out periods 101..104
    for k, period in enumerate(range(101, 105)):
        ladder.rate(f"x{k}", 10 + k, "bob", "cat", 0.5, clock_period=period)
    assert (ann.rating, ann.rd, ann.volatility) == (rating, rd, sigma)
    # she enters period 105 after 4 idle periods: phi^2 + 4 sigma^2, and 0 idle a moment ago
    mu, phi = glicko2.mu_of(rating), glicko2.phi_of(rd)
    grown = math.sqrt(phi * phi + 4 * sigma * sigma)
    assert glicko2.entering_phi(rd, sigma, 4, s.max_rd) == grown
    assert glicko2.entering_phi(rd, sigma, 0, s.max_rd) == phi
    # after very long the growth stops at the cap
    assert glicko2.rd_of(glicko2.entering_phi(rd, sigma, 10_000, s.max_rd)) == pytest.approx(250)
    ladder.rate("m2", 20, "ann", "bob", 0.0, clock_period=105)
    entry = ladder.history[-2]
    assert entry.player_id == "ann" and entry.rd_before == glicko2.rd_of(grown)
    assert entry.before == rating and mu == glicko2.mu_of(entry.before)


def test_expected_scores_of_two_players_add_up_to_one_and_favour_the_higher() -> None:
    a = glicko2.expected_score(1700.0, 60.0, 1500.0, 300.0)
    b = glicko2.expected_score(1500.0, 300.0, 1700.0, 60.0)
    assert a + b == pytest.approx(1.0) and a > 0.5
    # more uncertainty pulls the expectation towards a half
    assert glicko2.expected_score(1700.0, 350.0, 1500.0, 350.0) < a


def test_settings_are_checked_by_name() -> None:
    import msgspec

    from service.ratings.settings import settings_from_json

    s = settings_from_json({"system": "glicko2", "tau": 0.3})
    assert isinstance(s, Glicko2Settings) and s.tau == 0.3 and s.provisional_rd == 110.0
    with pytest.raises(msgspec.ValidationError, match="tau"):
        settings_from_json({"system": "glicko2", "tau": 9})
    with pytest.raises(msgspec.ValidationError, match="k_new"):
        settings_from_json({"system": "glicko2", "k_new": 40})
    with pytest.raises(msgspec.ValidationError, match="max_rd"):
        settings_from_json({"system": "glicko2", "initial_rd": 400, "max_rd": 300})


# -- the fast fold against the reference --------------------------------------------

PLAYERS = [f"p{i}" for i in range(7)]
game = st.tuples(
    st.sampled_from(PLAYERS),
    st.sampled_from(PLAYERS),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.integers(0, 3),  # how many periods the clock moves before this game (mostly 0)
    st.booleans(),  # ended on time
).filter(lambda t: t[0] != t[1])
item = st.one_of(
    game,
    game,
    game,
    game,
    game,
    game,
    st.tuples(st.just("boundary"), st.sampled_from([None, 0.0, 0.25, 1.0])),
)
settings_st = st.builds(
    Glicko2Settings,
    initial_rd=st.sampled_from([350.0, 200.0]),
    max_rd=st.sampled_from([350.0, 400.0]),
    tau=st.sampled_from([0.5, 0.3, 1.2]),
)


def run_reference(items: list, s: Glicko2Settings) -> Glicko2Ratings:
    ladder = Glicko2Ratings(s)
    clock = 50
    for k, it in enumerate(items):
        if it[0] == "boundary":
            if it[1] is None:
                ladder.close_periods()
            else:
                ladder.soft_reset(it[1])
            continue
        a, b, score, moves, timeout = it
        clock += moves
        # a clock that sometimes goes back a period: the ladder's period does not
        ladder.rate(f"m{k}", 10 + 3 * k, a, b, score, clock - (k % 5 == 4), timeout)
    return ladder


def run_fold(items: list, s: Glicko2Settings) -> tuple[Roster, object]:
    roster = Roster()
    blocks: list = []
    block: list[list] = [[], [], [], [], [], []]
    clock = 50
    for k, it in enumerate(items):
        if it[0] == "boundary":
            blocks += [tuple(block), Boundary(it[1])]
            block = [[], [], [], [], [], []]
            continue
        a, b, score, moves, timeout = it
        clock += moves
        position = 10 + 3 * k
        block[0].append(roster[a])
        block[1].append(roster[b])
        block[2].append(score)
        block[3].append(position * 256 + code_of(score, timeout))
        block[4].append(position * 256 + code_of(1.0 - score, timeout))
        block[5].append(clock - (k % 5 == 4))
    blocks.append(tuple(block))
    return roster, rate_periods(blocks, len(roster), s)


def hexed(values: object) -> object:
    if isinstance(values, float):
        return values.hex()
    if isinstance(values, list | tuple):
        return [hexed(v) for v in values]
    return values


@settings(max_examples=250, deadline=None)
@given(st.lists(item, max_size=90), settings_st)
def test_the_fast_recompute_gives_the_reference_ladder_bit_for_bit(items, s) -> None:
    reference = run_reference(items, s)
    roster, fold = run_fold(items, s)
    ids = list(roster)
    for p, player_id in enumerate(ids):
        if not fold.tags[p]:
            continue
        ref = reference.players[player_id]
        row = table_row(fold, p, s)
        expected = (
            ref.rating,
            ref.games,
            ref.wins,
            ref.draws,
            ref.losses,
            ref.peak,
            False,
            ref.rd > s.provisional_rd,
            ref.timeouts,
            ref.rd,
            ref.volatility,
            ref.period,
            ref.period_open,
            ref.base_rating,
            ref.base_rd,
            ref.base_volatility,
            ref.base_period,
            ref.v_sum,
            ref.d_sum,
            ref.period_games,
        )
        assert hexed(list(row)) == hexed(list(expected)), player_id
        before, after, rd_before, rd_after, periods = history_columns(fold, p)
        mine = [e for e in reference.history if e.player_id == player_id]
        assert hexed(
            [list(before), list(after), list(rd_before), list(rd_after), list(periods)]
        ) == hexed(
            [
                [e.before for e in mine],
                [e.after for e in mine],
                [e.rd_before for e in mine],
                [e.rd_after for e in mine],
                [e.period for e in mine],
            ]
        )
    assert fold.ladder_period == reference.period


def test_a_soft_reset_moves_ratings_and_rds_part_of_the_way_back() -> None:
    s = Glicko2Settings()
    ladder = Glicko2Ratings(s)
    for k in range(6):
        ladder.rate(f"m{k}", k + 1, "ann", "bob", 1.0, clock_period=k)
    ann = ladder.players["ann"]
    rating, rd = ann.rating, ann.rd
    ladder.soft_reset(0.25)
    assert ann.rating == 1500.0 + 0.75 * (rating - 1500.0)
    assert ann.rd == 350.0 + 0.75 * (rd - 350.0)
    assert not ann.period_open
