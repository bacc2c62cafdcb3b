"""Elo as the federations run it: hand-computed values and recompute == incremental."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from service.ratings.elo import (
    DEFAULT_SETTINGS,
    EloRatings,
    EloSettings,
    expected_score,
    recompute,
)
from service.ratings.settings import settings_from_json


def hand_elo(r: float, opp: float, score: float, k: float) -> float:
    d = max(-400.0, min(400.0, r - opp))
    return r + k * (score - 1 / (1 + 10 ** (-d / 400)))


def test_two_new_players_move_by_twenty_after_one_win() -> None:
    ladder = recompute([("m1", 1, "ann", "bob", 1.0)])
    assert ladder.rating("ann") == 1520.0
    assert ladder.rating("bob") == 1480.0


def test_a_draw_between_equals_changes_nothing_and_counts_as_a_draw() -> None:
    ladder = recompute([("m1", 1, "ann", "bob", 0.5)])
    table = {p.player_id: p for p in ladder.table()}
    assert table["ann"].rating == 1500.0
    assert (table["ann"].wins, table["ann"].draws, table["ann"].losses) == (0, 1, 0)
    assert table["bob"].provisional


def test_k_drops_from_40_to_20_after_thirty_games() -> None:
    # ann beats a fresh opponent every time; compute her rating by hand
    results = [(f"m{i}", i, "ann", f"fresh{i}", 1.0) for i in range(1, 33)]
    ladder = recompute(results)
    r = 1500.0
    for i in range(32):
        k = 40.0 if i < 30 else 20.0
        r = hand_elo(r, 1500.0, 1.0, k)
    assert math.isclose(ladder.rating("ann"), r, abs_tol=1e-9)
    ann = next(p for p in ladder.table() if p.player_id == "ann")
    assert ann.games == 32 and ann.wins == 32 and not ann.provisional


def test_k_is_10_once_2400_was_reached_even_after_falling_below() -> None:
    s = EloSettings(initial=2390.0)
    # 30 draws against an equal 2390 player keep ann at 2390 (K 40 phase ends)
    results = [(f"d{i}", i, "ann", f"peer{i}", 0.5) for i in range(30)]
    # a win against 2390 at K 20: +10 -> 2400, reached
    results.append(("w", 100, "ann", "peer-w", 1.0))
    # a loss against a fresh 2390 player: K 10 now (sticky), she drops below 2400
    results.append(("l", 101, "ann", "peer-l", 0.0))
    # another loss: still K 10 though she is below 2400
    results.append(("l2", 102, "ann", "peer-l2", 0.0))
    ladder = recompute(results, s)
    r = 2390.0
    r = hand_elo(r, 2390.0, 1.0, 20.0)
    assert r == 2400.0
    r = hand_elo(r, 2390.0, 0.0, 10.0)
    assert r < 2400.0
    r = hand_elo(r, 2390.0, 0.0, 10.0)
    assert math.isclose(ladder.rating("ann"), r, abs_tol=1e-9)
    ann = next(p for p in ladder.table() if p.player_id == "ann")
    assert ann.reached_master and ann.peak == 2400.0


def test_a_difference_beyond_400_counts_as_400() -> None:
    assert expected_score(2400, 1500) == expected_score(1900, 1500)
    assert math.isclose(expected_score(1500, 2400), 1 / 11)


def test_ladder_json_settings_take_defaults_and_refuse_an_unknown_key() -> None:
    import msgspec
    import pytest

    s = settings_from_json({"initial": 1200, "k_established": 16})
    assert isinstance(s, EloSettings)
    assert s.initial == 1200.0 and s.k_established == 16.0 and s.k_new == DEFAULT_SETTINGS.k_new
    assert settings_from_json(None) == DEFAULT_SETTINGS
    assert settings_from_json(b'{"k_master": 5}') == EloSettings(k_master=5.0)
    # what fifteen aliases used to accept silently is now refused, by name
    for alias in ("k_factor", "initial_rating", "max_diff", "provisional_until"):
        with pytest.raises(msgspec.ValidationError, match=alias):
            settings_from_json({alias: 16})
    with pytest.raises(msgspec.ValidationError, match="k_new"):
        settings_from_json({"k_new": 0})
    with pytest.raises(msgspec.ValidationError, match="system"):
        settings_from_json({"system": "trueskill"})


PLAYERS = [f"p{i}" for i in range(6)]
result_st = st.tuples(
    st.sampled_from(PLAYERS), st.sampled_from(PLAYERS), st.sampled_from([0.0, 0.5, 1.0])
).filter(lambda t: t[0] != t[1])


@settings(max_examples=150, deadline=None)
@given(st.lists(result_st, max_size=120), st.data())
def test_recompute_from_scratch_equals_incremental_updates(results, data) -> None:
    # settings that reach the K changes
    s = EloSettings(initial=2300.0, established_after_games=5, provisional_games=4)
    rows = [(f"m{i}", i, a, b, sc) for i, (a, b, sc) in enumerate(results)]
    whole = recompute(rows, s)
    # incremental: stop at random points, persist the table, resume from it
    ladder = EloRatings(s)
    history = []
    i = 0
    while i < len(rows):
        step = data.draw(st.integers(1, 20))
        for row in rows[i : i + step]:
            ladder.rate(*row)
        history.extend(ladder.changes())
        ladder = EloRatings(s, ladder.table())
        i += step
    assert ladder.table() == whole.table()
    assert history == whole.changes()


@settings(max_examples=100, deadline=None)
@given(st.lists(result_st, max_size=80))
def test_equal_k_keeps_the_rating_pool_constant(results) -> None:
    s = EloSettings(k_new=20.0)
    ladder = recompute([(f"m{i}", i, a, b, sc) for i, (a, b, sc) in enumerate(results)], s)
    table = ladder.table()
    assert math.isclose(sum(p.rating for p in table), 1500.0 * len(table), abs_tol=1e-6)
    assert all(p.games == p.wins + p.draws + p.losses for p in table)


settings_st = st.builds(
    EloSettings,
    # near the master rating, so that it is reached before, at and after the
    # game where K stops being the new player's
    initial=st.sampled_from([1500.0, 2380.0, 2393.0, 2399.5, 2400.0]),
    established_after_games=st.sampled_from([0, 1, 3, 6]),
    provisional_games=st.sampled_from([0, 6]),
    max_difference=st.sampled_from([400.0, 30.0, 5.0]),  # small caps: the cap is hit
    k_new=st.sampled_from([40.0, 32.5]),
    k_established=st.sampled_from([20.0, 15.0]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(result_st, max_size=120), settings_st, st.booleans())
def test_the_fast_recompute_gives_the_reference_ladder_bit_for_bit(results, s, gaps) -> None:
    from workers.ratings.elo_fold import rate_results

    # positions as the log gives them: increasing, with gaps (other events between)
    rows = [
        (f"m{i}", (10 + 37 * i if gaps else 10 + i), a, b, sc)
        for i, (a, b, sc) in enumerate(results)
    ]
    reference = recompute(rows, s)
    table, history = rate_results(rows, s)
    assert bits(table) == bits(
        {
            p.player_id: [
                p.rating,
                p.games,
                p.wins,
                p.draws,
                p.losses,
                p.peak,
                p.reached_master,
                p.timeouts,
            ]
            for p in reference.table()
        }
    )
    expected: dict[str, list[tuple[int, float, float, float]]] = {}
    for c in reference.changes():
        expected.setdefault(c.player_id, []).append((c.position, c.before, c.after, c.score))
    assert bits({p: h for p, h in history.items() if h}) == bits(expected)


def bits(value: object) -> object:
    """``value`` with every float as its exact hex form (== on floats is not bits)."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, dict):
        return {k: bits(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [bits(v) for v in value]
    return value


def test_the_fast_loop_changes_k_where_the_reference_does() -> None:
    # ann: many games in one chunk, crossing established_after_games and the master
    # rating at different matches; the segments must fall exactly there
    from workers.ratings.elo_fold import rate_results

    s = EloSettings(initial=2350.0, established_after_games=4, provisional_games=4)
    rows = [(f"m{i}", 1000 + 3 * i, "ann", f"o{i % 3}", 1.0 if i % 5 else 0.0) for i in range(40)]
    rows += [(f"x{i}", 2000 + i, f"o{i % 3}", "bob", 0.5) for i in range(10)]
    reference = recompute(rows, s)
    table, history = rate_results(rows, s)
    for p in reference.table():
        assert table[p.player_id][0] == p.rating, p.player_id
    assert [h[2] for h in history["ann"]] == [
        c.after for c in reference.changes() if c.player_id == "ann"
    ]
    assert table["ann"][6] and table["ann"][1] == 40


def test_a_match_against_oneself_is_left_to_the_reference() -> None:
    import pytest

    from workers.ratings.elo_fold import SelfMatchError, rate_results

    with pytest.raises(SelfMatchError):
        rate_results([("m1", 1, "ann", "bob", 1.0), ("m2", 2, "ann", "ann", 0.5)], DEFAULT_SETTINGS)


def test_the_fast_recompute_still_gives_the_bits_it_gave_before_the_package_move() -> None:
    # 30,000 synthetic results, two settings: a sha256 of every rating and history
    # entry in hex, as computed by main's workers/ratings.py (commit 2927575)
    # before it became a package. Any change to the arithmetic changes it.
    import hashlib
    import random

    from workers.ratings.elo_fold import rate_results

    rng = random.Random(20261201)
    rows = []
    position = 10
    for i in range(30_000):
        a = rng.randrange(300)
        b = (a + 1 + rng.randrange(299)) % 300
        position += 1 + rng.randrange(5)
        rows.append((f"m{i}", position, f"p{a}", f"p{b}", rng.choice((1.0, 1.0, 0.5, 0.0, 0.0))))
    digests = []
    for s in (
        EloSettings(),
        EloSettings(
            initial=2350.0, established_after_games=5, provisional_games=5, max_difference=150.0
        ),
    ):
        table, history = rate_results(rows, s)
        h = hashlib.sha256()
        for p in sorted(table):
            h.update(repr([v.hex() if isinstance(v, float) else v for v in table[p][:7]]).encode())
            h.update(repr([(pos, b.hex(), a.hex(), sc) for pos, b, a, sc in history[p]]).encode())
        digests.append(h.hexdigest())
    assert digests == [
        "0b504b1f7cfacba0785bdab150731f83ea3137986ad2e272cbe82b568ba5a334",
        "fdf1dc262866f147f28fabf9a3ffd06fbddda1a244ceaae3b39826e53c15f6ef",
    ]


def test_a_soft_reset_between_results_is_the_same_in_the_fast_recompute() -> None:
    from workers.ratings.elo_fold import Reset, rate_results

    s = EloSettings(established_after_games=3)
    rows = [
        (f"m{i}", 10 + i, f"p{i % 4}", f"p{(i + 1) % 4}", (1.0, 0.0, 0.5)[i % 3]) for i in range(20)
    ]
    items = [*rows[:8], Reset(0.5), *rows[8:14], Reset(0.25), Reset(1.0), *rows[14:]]
    reference = EloRatings(s)
    for it in items:
        if isinstance(it, Reset):
            reference.soft_reset(it.fraction)
        else:
            reference.rate(*it)
    table, history = rate_results(items, s)
    assert bits({p: row[0] for p, row in table.items()}) == bits(
        {p.player_id: p.rating for p in reference.table()}
    )
    expected: dict[str, list[tuple[int, float, float, float]]] = {}
    for c in reference.changes():
        expected.setdefault(c.player_id, []).append((c.position, c.before, c.after, c.score))
    assert bits(history) == bits(expected)
    # the reset moved the before of each player's first match after it
    first_after = next(h for h in history["p0"] if h[0] > 23)
    assert first_after[1] == 1500.0  # a full reset (1.0) came last
