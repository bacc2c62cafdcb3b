"""The audit checks on in-memory rows: an honest log is consistent, and each
kind of change is named at its version. (The same tampering, made in
PostgreSQL, is in test_audit_tampering.py.)"""

from __future__ import annotations

import random

import msgspec
from audit_matches import chain_rows, play, rechain
from hypothesis import given, settings
from hypothesis import strategies as st

from service.audit import AuditInputs, build_report, from_json, to_json
from service.audit.diff import first_difference
from service.audit.render import render


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.floats(0, 0.03))
def test_every_honest_random_match_audits_consistent(seed: int, resign: float) -> None:
    rng = random.Random(seed)
    match_seed, batches = play(rng, resign_chance=resign)
    rows = chain_rows("m1", batches)
    report = build_report("m1", rows, AuditInputs(stored_seed=match_seed))
    assert report.verdict.consistent, report.verdict.line
    assert report.status == "finished"
    assert report.chain.status == "consistent"
    assert report.refold.status == "consistent"
    assert report.refold.events_compared == len(rows)
    assert report.refold.seed_source == "revealed"
    assert report.fairness.status == "consistent"
    assert report.fairness.deals_checked == sum(r.type == "hand_dealt" for r in rows)
    assert all(e.hash_ok for e in report.events)
    assert report.verdict.line.startswith("consistent")


def test_the_report_survives_a_json_round_trip() -> None:
    seed, batches = play(random.Random(7))
    report = build_report("m1", chain_rows("m1", batches), AuditInputs(stored_seed=seed))
    assert from_json(to_json(report)) == report
    text = render(report)
    assert report.verdict.line in text


def test_a_live_match_is_refolded_with_the_stored_seed_which_the_report_never_shows() -> None:
    seed, batches = play(random.Random(3), stop_after=6)
    rows = chain_rows("m1", batches)
    report = build_report("m1", rows, AuditInputs(stored_seed=seed))
    assert report.status == "live"
    assert report.refold.status == "consistent"
    assert report.refold.seed_source == "stored"
    assert report.fairness.status == "consistent"  # checked with the stored seed
    assert report.verdict.consistent
    assert seed not in to_json(report).decode()
    assert seed not in render(report)


def test_a_live_match_without_the_stored_seed_is_pending_not_inconsistent() -> None:
    _, batches = play(random.Random(3), stop_after=6)
    report = build_report("m1", chain_rows("m1", batches))
    assert report.refold.status == "skipped"
    assert report.fairness.status == "pending"


def test_a_changed_move_whose_hashes_were_recomputed_is_caught_by_the_refold() -> None:
    rng = random.Random(11)
    seed, batches = play(rng)
    rows = chain_rows("m1", batches)
    played = next(r for r in rows if r.type == "card_played")
    tampered = [
        msgspec.structs.replace(
            r, data={**r.data, "target": "suit" if r.data["target"] == "number" else "number"}
        )
        if r.version == played.version
        else r
        for r in rows
    ]
    report = build_report("m1", rechain(tampered), AuditInputs(stored_seed=seed))
    assert report.chain.status == "consistent"  # the forger recomputed the chain
    assert report.refold.status == "inconsistent"
    assert not report.verdict.consistent
    diff = report.refold.first_difference
    assert diff is not None and diff.version is not None
    assert diff.version >= played.version


def test_a_seed_mismatch_between_revealed_and_stored_names_the_match_ended_event() -> None:
    seed, batches = play(random.Random(5))
    rows = chain_rows("m1", batches)
    other = "ab" * 32
    ended = next(r for r in rows if r.type == "match_ended")
    forged = rechain(
        [
            msgspec.structs.replace(r, data={**r.data, "seed": other}) if r is ended else r
            for r in rows
        ]
    )
    report = build_report("m1", forged, AuditInputs(stored_seed=seed))
    assert report.fairness.first_bad_deal is not None
    assert report.fairness.first_bad_deal.version == ended.version
    assert report.fairness.commitment_ok is False
    assert report.refold.seed_source == "stored"
    diff = report.refold.first_difference
    assert diff is not None and diff.version == ended.version and diff.path == "seed"


def test_first_difference_names_the_path_and_treats_true_and_one_apart() -> None:
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}) == ("a[1]", 2, 3)
    assert first_difference({"a": True}, {"a": 1}) == ("a", True, 1)
    assert first_difference({"a": 1, "x": 0}, {"a": 1}) == ("x", 0, None)
    assert first_difference({"b": 1, "a": 2}, {"a": 2, "b": 1}) is None


def test_a_live_match_missing_its_next_deal_does_not_show_that_deal() -> None:
    from schemas.events import HandDealt

    for n in range(200):
        seed, batches = play(random.Random(n))
        cut = next(
            (
                i
                for i, (_, es) in enumerate(batches)
                if i > 0 and isinstance(es[-1], HandDealt) and len(es) > 1
            ),
            None,
        )
        if cut is not None:
            break
    assert cut is not None
    rows = chain_rows("m1", batches[: cut + 1])[:-1]  # the deal at the end is gone

    report = build_report("m1", rows, AuditInputs(stored_seed=seed))

    assert report.status == "live"
    diff = report.refold.first_difference
    assert diff is not None and diff.version == rows[-1].version + 1
    assert diff.expected == {"type": "hand_dealt", "hand": batches[cut][1][-1].hand, "hidden": True}
    assert seed not in to_json(report).decode()


Leaf = tuple[tuple[object, ...], object]


def _leaves(value: object, path: tuple[object, ...] = ()) -> list[Leaf]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() if k != "type" for leaf in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*path, i))]
    return [(path, value)]


def _other(value: object, rng: random.Random) -> object:
    from schemas.cards import ALL_CARDS

    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((-1, 1))
    if isinstance(value, str) and value in ALL_CARDS:
        return rng.choice([c for c in ALL_CARDS if c != value])
    if isinstance(value, str):
        return value + "x"
    return 0


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32))
def test_any_single_change_is_caught_even_with_the_chain_recomputed(n: int) -> None:
    """A forger who changes one value anywhere in the log, and recomputes every
    hash, is still caught: by the re-fold, the fairness check or the creation
    check (a value the event's type no longer accepts cannot even be re-hashed)."""
    import copy

    rng = random.Random(n)
    seed, batches = play(random.Random(n % 50))
    rows = chain_rows("m1", batches)
    # The creation is one row in sixty but holds the most unused values: favour it.
    i = 0 if rng.random() < 0.2 else rng.randrange(len(rows))
    data = copy.deepcopy(rows[i].data)
    path, value = rng.choice(_leaves(data))
    target = data
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = _other(value, rng)  # type: ignore[index]
    forged = list(rows)
    forged[i] = msgspec.structs.replace(rows[i], data=data)
    try:
        forged = rechain(forged)
    except msgspec.ValidationError:
        return  # not an event any more: no valid hash exists for it

    report = build_report("m1", forged, AuditInputs(stored_seed=seed))

    assert report.chain.status == "consistent"
    assert not report.verdict.consistent, (rows[i].type, path)
    versions = {
        f.version
        for f in (report.refold.first_difference, report.fairness.first_bad_deal)
        if f is not None
    }
    # Named at the forged event or later, never before it.
    named = [v for v in versions if v is not None]
    assert named and min(named) >= rows[i].version, (rows[i].version, versions)
