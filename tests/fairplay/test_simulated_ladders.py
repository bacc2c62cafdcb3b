"""The signals on whole ladders of simulated bots (tests/fairplay/ladder_sim.py):
every planted case is flagged, at most one honest bot in 200 is named by any
flag (docs/fairplay.md states the rate measured), and the refunds of an account
closed mid-season equal, bit for bit, a recompute without its voided matches."""

from __future__ import annotations

import pytest
from ladder_sim import build

from schemas.fairplay import DEFAULT_FAIRPLAY, AccountClosed
from service.fairplay.refunds import refunds_of
from service.fairplay.signals import flags_of_ladder
from service.ratings.elo import EloRatings, EloSettings

ELO = EloSettings()
HONEST = 1_000
FALSE_POSITIVE_RATE = 0.005
"""The most honest bots a ladder may name in a flag, as a share of them (measured: 0)."""


@pytest.mark.parametrize("seed", [1, 2])
def test_given_a_ladder_with_planted_cases_every_one_is_flagged_and_honest_bots_are_not(
    seed: int,
) -> None:
    ladder = build(seed, honest=HONEST)

    flags = flags_of_ladder("L", ladder.games, DEFAULT_FAIRPLAY, ELO, ladder.accounts)

    for signal, players in ladder.planted.items():
        named = {p for f in flags if f.signal == signal for p in f.players}
        assert players <= named, (signal, players - named)
    traders = {f.signal for f in flags if set(f.players) == {"trader_a", "trader_b"}}
    assert traders == {"pair_share", "one_sided", "early_ends", "rating_from_one"}
    honest = set(ladder.honest)
    named_honest = {p for f in flags for p in f.players if p in honest}
    assert len(named_honest) <= FALSE_POSITIVE_RATE * HONEST, sorted(named_honest)


def test_given_an_honest_ladder_of_a_thousand_bots_no_flag_is_raised_beyond_the_stated_rate() -> (
    None
):
    ladder = build(3, honest=HONEST, plant=False)

    flags = flags_of_ladder("L", ladder.games, DEFAULT_FAIRPLAY, ELO, ladder.accounts)

    named = {p for f in flags for p in f.players}
    assert len(named) <= FALSE_POSITIVE_RATE * HONEST, [f.signal for f in flags]


def test_given_a_booster_closed_mid_season_its_victims_refunds_equal_a_recompute_without_it() -> (
    None
):
    ladder = build(4, honest=HONEST)
    at = ladder.games[len(ladder.games) // 2].position
    voided = tuple(g.match_id for g in ladder.games if "booster" in g.players and g.position <= at)
    closure = AccountClosed(
        player_id="booster", admin="admin", reason="fed", at_position=at, voided=voided
    )

    refunds = refunds_of("L", ladder.games, [closure], ELO)

    kept = EloRatings(ELO)
    with_them = EloRatings(ELO)
    for g in ladder.games:
        if g.position > at:
            break
        score0 = 1.0 if g.winner == 0 else 0.0
        with_them.rate(g.match_id, g.position, *g.players, score0)
        if g.match_id not in voided:
            kept.rate(g.match_id, g.position, *g.players, score0)
    victims = {
        g.players[1 - g.winner]
        for g in ladder.games
        if g.match_id in voided and g.winner is not None
    } - {"booster_feed"}
    assert {r.player_id for r in refunds} >= victims
    assert victims, "the booster took points off somebody before its closure"
    for r in refunds:
        assert r.after == kept.rating(r.player_id)  # bit for bit
        assert r.before == with_them.rating(r.player_id)
        assert r.amount == r.after - r.before
        assert r.reason == "refund: opponent closed for fair play"
    assert "booster_feed" in {r.player_id for r in refunds}  # the accomplice, until closed too
    also_closed = refunds_of("L", ladder.games, [closure], ELO, closed={"booster", "booster_feed"})
    assert also_closed == [r for r in refunds if r.player_id != "booster_feed"]
