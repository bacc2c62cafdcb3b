"""Each kind of tampering, made in PostgreSQL by a superuser with the triggers
off, is reported by the audit as exactly that problem at that event.

Every test runs twice: once by a clumsy forger (the chain check catches the
change at its version), and once by a forger who also recomputes the hash
chain, so the chain check passes and the re-fold and fairness checks must
catch it on their own. ``findings`` maps each failing check to the version it
names, so a test says precisely which checks see the change, and where.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from audit_forgery import Forger, findings

from schemas.events import CardPlayed, Passed

pytestmark = pytest.mark.anyio

RECHAIN = pytest.mark.parametrize("rechain", [False, True], ids=["clumsy", "rechained"])


def version_of(rows: list[dict[str, Any]], type_: str, nth: int = 0, **where: Any) -> int:
    matching = [
        r["version"]
        for r in rows
        if r["type"] == type_ and all(r["data"].get(k) == v for k, v in where.items())
    ]
    return matching[nth]


def answered_card(rows: list[dict[str, Any]]) -> int:
    """The version of a card the other seat answered with a card at once."""
    return next(
        r["version"]
        for r, nxt in itertools.pairwise(rows)
        if r["type"] == nxt["type"] == "card_played" and r["data"]["seat"] != nxt["data"]["seat"]
    )


async def test_an_untouched_match_is_consistent(finished: Any, audit: Any) -> None:
    report = await audit(finished[0])
    assert report.verdict.consistent, report.verdict.line
    assert findings(report) == {}
    assert report.status == "finished"
    assert report.fairness.deals_checked >= 2


@RECHAIN
async def test_a_changed_card_in_a_deal(forger: Forger, audit: Any, rechain: bool) -> None:
    rows = await forger.rows()
    v = version_of(rows, "hand_dealt", hand=2)
    data = await forger.data(v)
    # Swap a card of seat 0's new cards with a set-aside one: the deal still
    # holds 18 different cards, only not the ones the seed gives.
    hand0 = list(data["hands"][0])
    hand0[-1], data["set_aside"][0] = data["set_aside"][0], hand0[-1]
    data["hands"][0] = hand0
    await forger.set_data(v, data)
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    expected = {"refold": v, "fairness": v} | ({} if rechain else {"chain": v})
    assert findings(report) == expected
    assert report.fairness.first_bad_deal.path.startswith(("hands[0]", "set_aside"))
    assert report.refold.first_difference.event_type == "hand_dealt"
    assert not report.verdict.consistent
    assert f"version {v}" in report.verdict.line


@RECHAIN
async def test_a_changed_move(forger: Forger, audit: Any, rechain: bool) -> None:
    rows = await forger.rows()
    v = version_of(rows, "card_played", 2)
    data = await forger.data(v)
    deal = next(r["data"] for r in rows if r["type"] == "hand_dealt" and r["version"] < v)
    data["card"] = deal["set_aside"][0]  # a card nobody held
    await forger.set_data(v, data)
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    assert findings(report) == {"refold": v} | ({} if rechain else {"chain": v})
    assert "card_not_in_hand" in report.refold.first_difference.problem
    assert report.refold.first_difference.logged["card"] == deal["set_aside"][0]


@RECHAIN
async def test_a_move_attributed_to_the_other_player(
    forger: Forger, audit: Any, rechain: bool
) -> None:
    rows = await forger.rows()
    played = next(r for r in rows if r["type"] == "card_played")
    v = played["version"]
    other = next(r["actor"] for r in rows if r["actor"] not in (played["actor"], "system"))
    await forger.execute(
        "UPDATE events SET actor = %s WHERE match_id = %s AND version = %s",
        (other, forger.match_id, v),
    )
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    assert findings(report) == {"refold": v} | ({} if rechain else {"chain": v})
    diff = report.refold.first_difference
    assert (diff.path, diff.logged, diff.expected) == ("actor", other, played["actor"])


@RECHAIN
async def test_a_deleted_event(forger: Forger, audit: Any, rechain: bool) -> None:
    rows = await forger.rows()
    # A card answered by the other seat's card: without it, the answer is out of turn.
    v = answered_card(rows)
    # With rechain, the gap is closed too: every later version moves down by one.
    await forger.delete(v, close_gap=rechain)
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    if rechain:
        assert findings(report) == {"refold": v}
        assert "not_your_turn" in report.refold.first_difference.problem
    else:
        assert findings(report) == {"chain": v, "refold": v}
        assert report.chain.first_break.problem.startswith("version_gap")


@RECHAIN
async def test_two_events_swapped(forger: Forger, audit: Any, rechain: bool) -> None:
    rows = await forger.rows()
    v = answered_card(rows)
    # Swap the two rows' places in the match (a spare version keeps the key unique).
    swap = "UPDATE events SET version = %s WHERE match_id = %s AND version = %s"
    await forger.execute(swap, (100_000, forger.match_id, v))
    await forger.execute(swap, (v, forger.match_id, v + 1))
    await forger.execute(swap, (v + 1, forger.match_id, 100_000))
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    assert findings(report) == {"refold": v} | ({} if rechain else {"chain": v})
    assert "not_your_turn" in report.refold.first_difference.problem


@RECHAIN
@pytest.mark.parametrize("what", ["token_award", "reveal"])
async def test_a_forged_reveal_or_token_award(
    forger: Forger, audit: Any, rechain: bool, what: str
) -> None:
    rows = await forger.rows()
    v = next(
        r["version"]
        for r in rows
        if r["type"] == "round_revealed" and any(o["given"] for o in r["data"]["outcomes"])
    )
    data = await forger.data(v)
    outcome = next(o for o in data["outcomes"] if o["given"])
    if what == "token_award":
        # The token goes to the other seat.
        award = outcome["given"][0]
        outcome["given"][0] = {**award, "seat": 1 - award["seat"]}
        where = "given"
    else:
        outcome["winner"] = None if outcome["winner"] is not None else 0
        where = "winner"
    await forger.set_data(v, data)
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    assert findings(report) == {"refold": v} | ({} if rechain else {"chain": v})
    diff = report.refold.first_difference
    assert diff.event_type == "round_revealed"
    assert where in diff.path
    assert diff.logged != diff.expected


@RECHAIN
async def test_a_wrong_seed_revealed(forger: Forger, audit: Any, rechain: bool) -> None:
    rows = await forger.rows()
    v = version_of(rows, "match_ended")
    data = await forger.data(v)
    data["seed"] = "0" * 64
    await forger.set_data(v, data)
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    # The stored seed still fits the commitment: the re-fold deals from it and
    # finds the revealed seed is not the one the engine reveals.
    assert findings(report) == {"refold": v, "fairness": v} | ({} if rechain else {"chain": v})
    assert report.fairness.commitment_ok is False
    assert report.refold.seed_source == "stored"
    assert report.refold.first_difference.path == "seed"


async def test_a_wrong_seed_with_a_matching_forged_commitment_is_caught_at_the_first_deal(
    forger: Forger, audit: Any
) -> None:
    import msgspec

    from schemas.events import MatchCreated
    from service.engine.dealing import binding_of, bound_commitment

    rows = await forger.rows()
    wrong = "1" * 64
    created, ended = version_of(rows, "match_created"), version_of(rows, "match_ended")
    data = await forger.data(created)
    event = msgspec.convert(data, MatchCreated)
    data["seed_commitment"] = bound_commitment(wrong, binding_of(event))
    await forger.set_data(created, data)
    data = await forger.data(ended)
    data["seed"] = wrong
    await forger.set_data(ended, data)
    await forger.rechain()

    report = await audit(forger.match_id)

    first_deal = version_of(rows, "hand_dealt")
    assert findings(report) == {"refold": first_deal, "fairness": first_deal}
    assert report.fairness.commitment_ok is True


@RECHAIN
async def test_an_event_inserted_after_the_end(forger: Forger, audit: Any, rechain: bool) -> None:
    rows = await forger.rows()
    end = rows[-1]["version"]
    await forger.insert(
        end + 1, CardPlayed(seat=0, hand=1, round=1, card="M1", target="number"), actor="alice"
    )
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    assert findings(report) == {"refold": end + 1} | ({} if rechain else {"chain": end + 1})
    assert "after the match ended" in report.refold.first_difference.problem


@RECHAIN
async def test_an_event_inserted_in_the_middle(forger: Forger, audit: Any, rechain: bool) -> None:
    rows = await forger.rows()
    played = next(r for r in rows if r["type"] == "card_played")
    v, seat = played["version"], played["data"]["seat"]
    # Make room at version v (two steps: the (match, version) key stays unique).
    shift = "UPDATE events SET version = version + %s WHERE match_id = %s AND version >= %s"
    await forger.execute(shift, (1000, forger.match_id, v))
    await forger.execute(shift, (-999, forger.match_id, 1000))
    # A pass slipped in before the seat's first card: a legal move in itself.
    await forger.insert(v, Passed(seat=seat, hand=1, round=1), actor=played["actor"])
    if rechain:
        await forger.rechain()

    report = await audit(forger.match_id)

    if rechain:
        # The forged pass is a possible move, so the log only stops being a
        # possible history at the real card, which a seat that passed cannot play.
        assert findings(report) == {"refold": v + 1}
        assert "already_passed" in report.refold.first_difference.problem
    else:
        assert findings(report) == {"chain": v, "refold": v + 1}
        assert report.chain.first_break.problem.startswith("prev_hash_mismatch")
