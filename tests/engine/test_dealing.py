"""RULES §3, §10: dealing from the seed (docs/dealing.md), commitments, and checking a log."""

import hashlib
import random

import msgspec
from engine_script import SEED
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.cards import ALL_CARDS
from schemas.events import HandDealt, MatchCreated, MatchEnded, TeaPair
from schemas.rules import STANDARD
from service.bots import random_bot
from service.engine import check_deals, commitment, deal
from service.engine.selfplay import play_match

WORKED_SEED = bytes(range(32)).hex()


def second_implementation(seed: str, hand: int, dealer: int, kept=((), ())):
    """docs/dealing.md, re-implemented from the text alone (a cross-check)."""

    def words(shuffle_no: int):
        block = 0
        while True:
            data = b"matcha-deal-v1" + bytes.fromhex(seed)
            data += hand.to_bytes(4, "big") + shuffle_no.to_bytes(4, "big")
            digest = hashlib.sha256(data + block.to_bytes(4, "big")).digest()
            for k in range(0, 32, 4):
                yield int.from_bytes(digest[k : k + 4], "big")
            block += 1

    def fisher_yates(cards, shuffle_no):
        draw = words(shuffle_no)
        for i in range(len(cards) - 1, 0, -1):
            n = i + 1
            while (x := next(draw)) >= 2**32 - 2**32 % n:
                pass
            j = x % n
            cards[i], cards[j] = cards[j], cards[i]
        return cards

    held = set(kept[0]) | set(kept[1])
    first = fisher_yates([c for c in ALL_CARDS if c not in held and c[0] != "Z"], 1)
    zeros = [c for c in ALL_CARDS if c not in held and c[0] == "Z"]
    second = fisher_yates(first[6:] + zeros, 2)
    hands = [list(kept[0]), list(kept[1])]
    seat = 1 - dealer
    while len(hands[0]) < 5 or len(hands[1]) < 5:
        if len(hands[seat]) < 5:
            hands[seat].append(second.pop(0))
        seat = 1 - seat
    return first[:6], hands, second


def test_the_worked_example_of_docs_dealing_md() -> None:
    assert commitment(WORKED_SEED) == (
        "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
    )
    assert deal(WORKED_SEED, 1, 0) == HandDealt(
        hand=1,
        dealer=0,
        tea=(
            TeaPair(number="S4", suit="S2"),
            TeaPair(number="C3", suit="W3"),
            TeaPair(number="S1", suit="S3"),
        ),
        hands=(("M1", "C2", "Z2", "C1", "W1"), ("W4", "Z1", "M2", "C4", "M3")),
        set_aside=("M4", "W2"),
    )


@settings(max_examples=60, deadline=None)
@given(
    seed=st.binary(min_size=32, max_size=32).map(bytes.hex),
    hand=st.integers(1, 12),
    dealer=st.sampled_from([0, 1]),
    kept_mask=st.lists(st.sampled_from([None, 0, 1]), min_size=18, max_size=18),
)
def test_the_engine_deals_what_an_independent_implementation_of_the_document_deals(
    seed: str, hand: int, dealer: int, kept_mask: list
) -> None:
    kept0 = tuple(c for c, m in zip(ALL_CARDS, kept_mask, strict=True) if m == 0)[:5]
    kept1 = tuple(c for c, m in zip(ALL_CARDS, kept_mask, strict=True) if m == 1)[:5]
    dealt = deal(seed, hand, dealer, (kept0, kept1))  # type: ignore[arg-type]
    tea, hands, rest = second_implementation(seed, hand, dealer, (kept0, kept1))
    assert [c for p in dealt.tea for c in (p.number, p.suit)] == tea
    assert [list(h) for h in dealt.hands] == hands
    assert list(dealt.set_aside) == rest
    everything = [*tea, *hands[0], *hands[1], *rest]
    assert sorted(everything) == sorted(ALL_CARDS)


def test_given_an_honest_log_then_check_deals_finds_nothing() -> None:
    _, log = play_match((random_bot, random_bot), STANDARD, random.Random(5))
    seed = next(e.seed for e in log if isinstance(e, MatchEnded))
    assert check_deals(log, seed) == []


def test_given_a_tampered_deal_then_check_deals_names_its_hand_and_version() -> None:
    _, log = play_match((random_bot, random_bot), STANDARD, random.Random(6))
    seed = next(e.seed for e in log if isinstance(e, MatchEnded))
    first = log[1]
    assert isinstance(first, HandDealt)
    swapped = msgspec.structs.replace(first, hands=(first.hands[1], first.hands[0]))
    problems = check_deals([log[0], swapped, *log[2:]], seed)
    assert problems == ["Event 2: hand 1 was not dealt as the seed gives."]


def test_given_another_seed_then_the_commitment_does_not_match() -> None:
    _, log = play_match((random_bot, random_bot), STANDARD, random.Random(7))
    problems = check_deals(log, SEED)
    assert problems[0].startswith("Event 1: the seed does not match the commitment")


def _field(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "big") + raw


def test_the_commitment_is_published_when_the_match_is_created() -> None:
    # matcha-deal-v2, recomputed from docs/dealing.md: the commitment binds the
    # seed and the match's identity (id, players, ladder, ruleset, first dealer).
    _, log = play_match((random_bot, random_bot), STANDARD, random.Random(8))
    created = log[0]
    assert isinstance(created, MatchCreated)
    assert created.dealing_scheme == "matcha-deal-v2"
    seed = next(e.seed for e in log if isinstance(e, MatchEnded))
    bound = hashlib.sha256(
        b"matcha-match-binding-v1"
        + _field(created.match_id.encode())
        + _field(created.players[0].encode())
        + _field(created.players[1].encode())
        + _field((created.ladder_id or "").encode())
        + _field(msgspec.json.encode(created.ruleset))
        + _field(str(created.first_dealer).encode())
    ).digest()
    expected = hashlib.sha256(b"matcha-deal-v2" + bytes.fromhex(seed) + bound).hexdigest()
    assert created.seed_commitment == expected
    assert check_deals(log, seed) == []


def test_a_match_committed_under_v1_still_verifies_and_v2_binds_its_identity() -> None:
    _, log = play_match((random_bot, random_bot), STANDARD, random.Random(8))
    created = log[0]
    assert isinstance(created, MatchCreated)
    seed = next(e.seed for e in log if isinstance(e, MatchEnded))
    old = msgspec.structs.replace(
        created,
        dealing_scheme="matcha-deal-v1",
        seed_commitment=hashlib.sha256(bytes.fromhex(seed)).hexdigest(),
    )
    assert check_deals([old, *log[1:]], seed) == []
    swapped = msgspec.structs.replace(created, players=created.players[::-1])
    cloned = msgspec.structs.replace(created, match_id="another-id")
    for forged in (swapped, cloned):
        problems = check_deals([forged, *log[1:]], seed)
        assert problems[0].startswith("Event 1: the seed does not match the commitment")


def test_the_fast_path_of_the_shuffle_draws_what_the_general_path_draws(monkeypatch) -> None:
    import service.engine.dealing as dealing

    seeds = [random.Random(i).getrandbits(256).to_bytes(32, "big").hex() for i in range(50)]
    fast = [deal(s, h, 0) for s in seeds for h in (1, 2)]
    # Every digest now "holds" the run that marks a word that might be
    # rejected, so each shuffle takes the general path.
    monkeypatch.setattr(dealing, "_UNSAFE", b"")
    assert [deal(s, h, 0) for s in seeds for h in (1, 2)] == fast


def test_words_that_uniform_rejects_are_skipped_as_docs_dealing_md_says(monkeypatch) -> None:
    """Real digests almost never hold a rejected word, so make every block hold some:
    words 0xFFFFFFFF (rejected by every n) and 0xFFFFFFF8 (rejected only by n = 13,
    whose limit is 2**32 - 9) among ordinary ones; the engine must agree with the
    document's reading, on both of its paths."""
    import service.engine.dealing as dealing

    real_sha256 = hashlib.sha256

    class Crafted:
        def __init__(self, data: bytes) -> None:
            self.real = real_sha256(data).digest()

        def digest(self) -> bytes:
            # words 1 and 5 of each block become 0xFFFFFFFF and 0xFFFFFFF8
            r = self.real
            return r[:4] + b"\xff" * 4 + r[8:20] + b"\xff\xff\xff\xf8" + r[24:]

    monkeypatch.setattr(dealing, "sha256", Crafted)
    monkeypatch.setattr(hashlib, "sha256", Crafted)
    seeds = [random.Random(i).getrandbits(256).to_bytes(32, "big").hex() for i in range(20)]
    for seed in seeds:
        for hand, kept in ((1, ((), ())), (2, (("M1", "C2"), ("Z1",)))):
            dealt = deal(seed, hand, 0, kept)  # type: ignore[arg-type]
            tea, hands, rest = second_implementation(seed, hand, 0, kept)
            assert [c for p in dealt.tea for c in (p.number, p.suit)] == tea
            assert [list(h) for h in dealt.hands] == hands
            assert list(dealt.set_aside) == rest
