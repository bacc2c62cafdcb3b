"""Fair dealing from the match seed (RULES §3, §10; specified in docs/dealing.md).

Scheme ``matcha-deal-v1``, language neutral:

* the seed is 32 bytes (64 hex characters); its commitment is
  ``sha256(seed bytes)`` in hex;
* shuffle ``s`` of hand ``h`` reads a byte stream made of the blocks
  ``sha256(b"matcha-deal-v1" || seed || u32be(h) || u32be(s) || u32be(i))``
  for ``i = 0, 1, 2, ...``, taken 4 bytes at a time as big-endian ``u32``;
* ``uniform(n)``: draw ``x`` until ``x < 2**32 - 2**32 % n``, answer ``x % n``;
* Fisher-Yates: for ``i`` from ``len - 1`` down to 1, swap item ``i`` with
  item ``uniform(i + 1)``.

Shuffle 1 orders the non-zero cards not kept (in canonical order); the first
six are the tea cards. Shuffle 2 orders the rest of them followed by the
zero cards not kept; cards are dealt one at a time, the non-dealer first,
skipping a full hand, and the last two are set aside.

Scheme ``matcha-deal-v2`` deals the same way and changes only the
commitment, which also binds the match's identity (its id, players, ruleset,
ladder and first dealer): ``sha256(b"matcha-deal-v2" || seed || binding)``
with ``binding = sha256(b"matcha-match-binding-v1" || field(match_id) ||
field(player 0) || field(player 1) || field(ladder_id or "") ||
field(ruleset JSON) || field(first dealer))``. A match copied under another
id, with its seats swapped or moved to another ladder, then no longer fits
its commitment; ``v1`` commitments (``sha256(seed)``) still verify old matches.
"""

import re
import struct
from collections.abc import Iterable, Iterator
from functools import lru_cache
from hashlib import sha256
from itertools import filterfalse
from operator import mod
from typing import Final

import msgspec

from schemas.cards import ALL_CARDS, Card, Seat
from schemas.events import CardsKept, Event, HandDealt, HandEnded, MatchCreated, MatchEnded, TeaPair
from schemas.rules import Ruleset

SCHEME_V1 = "matcha-deal-v1"
"""The commitment is ``sha256(seed)``: matches created before v2."""
SCHEME = "matcha-deal-v2"
"""What new matches use: the commitment binds the match's identity too."""
SCHEMES = (SCHEME_V1, SCHEME)
_DOMAIN = SCHEME_V1.encode()
"""The shuffle streams' domain, the same in both schemes (only the commitment changed)."""
_COMMIT_V2 = SCHEME.encode()
_BINDING_DOMAIN = b"matcha-match-binding-v1"
_ruleset_encoder = msgspec.json.Encoder()
_SEED_RE = re.compile(r"[0-9a-f]{64}")
_NON_ZERO: tuple[Card, ...] = tuple(c for c in ALL_CARDS if c[0] != "Z")
_ZERO: tuple[Card, ...] = tuple(c for c in ALL_CARDS if c[0] == "Z")
_WORDS = struct.Struct(">8I")
_WORDS_2 = struct.Struct(">16I")
_U32 = struct.Struct(">I").pack
_BLOCK_NO = struct.Struct(">III")
"""``u32be(hand) || u32be(shuffle) || u32be(block)``: the end of a block's message."""
_UNSAFE = b"\xff\xff\xff"
"""Every word ``uniform(n)`` can reject when ``n <= 17`` begins with these bytes.

It rejects ``x >= 2**32 - 2**32 % n`` and ``2**32 % n < n <= 17 < 256``, so
``x >= 0xFFFFFF00``. A digest without this run anywhere has no such word.
"""


def valid_seed(seed: str) -> bool:
    """A seed is 64 lower-case hex characters (32 bytes)."""
    return _SEED_RE.fullmatch(seed) is not None


@lru_cache(maxsize=1024)
def commitment(seed: str) -> str:
    """The public commitment to a seed: SHA-256 of its 32 bytes, in hex.

    Remembered for the latest seeds: every deal after the first checks the
    seed against the commitment again.
    """
    return sha256(bytes.fromhex(seed)).hexdigest()


def _field(raw: bytes) -> bytes:
    return _U32(len(raw)) + raw


_RULESET_FIELDS: dict[Ruleset, bytes] = {}
"""``field(ruleset JSON)`` by ruleset: a handful exist, and encoding one cost more
than looking it up (callgrind)."""
_DEALER_FIELDS: Final = {0: _field(b"0"), 1: _field(b"1")}


def binding(
    *,
    match_id: str,
    players: tuple[str, str],
    ruleset: Ruleset,
    ladder_id: str | None,
    first_dealer: int,
) -> bytes:
    """The 32-byte digest of what a ``matcha-deal-v2`` commitment binds (docs/dealing.md).

    Written out (the lengths packed by one ``struct`` call each, the ruleset's and
    the dealer's fields looked up): 26.3k -> 19.7k instructions a call by
    callgrind, once per match started."""
    ruleset_field = _RULESET_FIELDS.get(ruleset)
    if ruleset_field is None:
        ruleset_field = _RULESET_FIELDS[ruleset] = _field(_ruleset_encoder.encode(ruleset))
    dealer_field = _DEALER_FIELDS.get(first_dealer) or _field(str(first_dealer).encode())
    match_raw = match_id.encode()
    seat0 = players[0].encode()
    seat1 = players[1].encode()
    ladder = (ladder_id or "").encode()
    return sha256(
        b"".join(
            (
                _BINDING_DOMAIN,
                _U32(len(match_raw)),
                match_raw,
                _U32(len(seat0)),
                seat0,
                _U32(len(seat1)),
                seat1,
                _U32(len(ladder)),
                ladder,
                ruleset_field,
                dealer_field,
            )
        )
    ).digest()


def binding_of(created: MatchCreated) -> bytes:
    return binding(
        match_id=created.match_id,
        players=created.players,
        ruleset=created.ruleset,
        ladder_id=created.ladder_id,
        first_dealer=created.first_dealer,
    )


@lru_cache(maxsize=1024)
def bound_commitment(seed: str, bound: bytes) -> str:
    """The ``matcha-deal-v2`` commitment: ``sha256("matcha-deal-v2" || seed || binding)``."""
    return sha256(_COMMIT_V2 + bytes.fromhex(seed) + bound).hexdigest()


def expected_commitment(created: MatchCreated, seed: str) -> str | None:
    """The commitment ``seed`` gives under the match's own scheme (None: unknown scheme)."""
    if created.dealing_scheme == SCHEME:
        return bound_commitment(seed, binding_of(created))
    if created.dealing_scheme == SCHEME_V1:
        return commitment(seed)
    return None


def fits(seed: str, seed_commitment: str, bound: bytes) -> bool:
    """``seed`` is the one committed to, under either scheme (the engine's check
    before each deal; the audit names the scheme, see ``expected_commitment``)."""
    # v2 first: every new match's, and cached from its start (``bound_commitment``).
    return seed_commitment == bound_commitment(seed, bound) or seed_commitment == commitment(seed)


def stream(seed: bytes, hand: int, shuffle_no: int) -> Iterator[int]:
    """The u32 words of shuffle ``shuffle_no`` of hand ``hand`` (for docs and checks)."""
    return _stream(_DOMAIN + seed, hand, shuffle_no)


def _stream(prefix: bytes, hand: int, shuffle_no: int) -> Iterator[int]:
    head = prefix + hand.to_bytes(4, "big") + shuffle_no.to_bytes(4, "big")
    block = 0
    while True:
        yield from _WORDS.unpack(sha256(head + block.to_bytes(4, "big")).digest())
        block += 1


@lru_cache(maxsize=1024)
def _stream_prefix(seed: str) -> bytes:
    """``"matcha-deal-v1" || seed bytes``, the start of every block a seed's deals
    hash: made once per seed, not twice per deal (the latest 1,024 seeds;
    self-play 1,330,249 -> 1,326,472 instructions per match by callgrind)."""
    return _DOMAIN + bytes.fromhex(seed)


def shuffle(cards: list[Card], seed: bytes, hand: int, shuffle_no: int) -> None:
    """Fisher-Yates in place, each swap index drawn by rejection sampling from the stream."""
    _shuffle(cards, _DOMAIN + seed, hand, shuffle_no)


def _shuffle(cards: list[Card], prefix: bytes, hand: int, shuffle_no: int) -> None:
    """``shuffle``, from the seed's ``_stream_prefix``."""
    n = len(cards)
    if n < 2:
        return
    if n <= 17:
        # Fast path, the same draws: one block gives 8 words, two blocks (only
        # when more than 8 swaps are due) the 16 a deal needs at most. When no
        # word can be rejected, the k-th swap index is the k-th word mod (n - k);
        # when one might be (a digest holding ``_UNSAFE`` anywhere: odds below
        # 1 in 250,000) the general path below reads the stream word by word.
        if n <= 9:
            digest = sha256(prefix + _BLOCK_NO.pack(hand, shuffle_no, 0)).digest()
            words = _WORDS.unpack(digest)
        else:
            digest = (
                sha256(prefix + _BLOCK_NO.pack(hand, shuffle_no, 0)).digest()
                + sha256(prefix + _BLOCK_NO.pack(hand, shuffle_no, 1)).digest()
            )
            words = _WORDS_2.unpack(digest)
        if digest.find(_UNSAFE) < 0:  # (``in`` would first try _UNSAFE as an int)
            # item i swaps with item words[k] % (i + 1), i = n - 1 - k
            i = n - 1
            for j in map(mod, words, range(n, 1, -1)):
                cards[i], cards[j] = cards[j], cards[i]
                i -= 1
            return
    draws = _stream(prefix, hand, shuffle_no)
    for i in range(n - 1, 0, -1):
        limit = 2**32 - (2**32 % (i + 1))
        while (x := next(draws)) >= limit:  # rejection sampling: no modulo bias
            pass
        j = x % (i + 1)
        cards[i], cards[j] = cards[j], cards[i]


def deal(
    seed: str,
    hand: int,
    dealer: Seat,
    kept: tuple[tuple[Card, ...], tuple[Card, ...]] = ((), ()),
    hand_size: int = 5,
) -> HandDealt:
    """Deal hand number ``hand`` (1-based): tea cards, the hands, the set-aside cards.

    ``kept`` are the cards each seat kept from the previous hand; they stay
    first in their owner's hand and the deal fills each hand up to ``hand_size``.
    """
    prefix = _stream_prefix(seed)
    if kept[0] or kept[1]:
        # The cards not kept, filtered in C (``filterfalse`` over one set), not by
        # a comprehension: a deal after a keep 88.2k -> 85.9k instructions (callgrind).
        held = {*kept[0], *kept[1]}.__contains__
        first = list(filterfalse(held, _NON_ZERO))
        second_zero = list(filterfalse(held, _ZERO))
    else:
        first = list(_NON_ZERO)
        second_zero = list(_ZERO)
    _shuffle(first, prefix, hand, 1)
    second = first[6:] + second_zero
    _shuffle(second, prefix, hand, 2)
    # One card at a time, the non-dealer first, a full hand skipped: the first
    # 2m cards alternate (m = the smaller need), the rest go to the other seat.
    need = (hand_size - len(kept[0]), hand_size - len(kept[1]))
    opener = 1 - dealer
    a, b = need[opener], need[dealer]
    m = min(a, b)
    dealt: list[tuple[Card, ...]] = [(), ()]
    dealt[opener] = (*second[0 : 2 * m : 2], *second[2 * m : 2 * m + a - m])
    dealt[dealer] = (*second[1 : 2 * m : 2], *second[2 * m : 2 * m + b - m])
    return HandDealt(
        hand=hand,
        dealer=dealer,
        tea=(
            TeaPair(number=first[0], suit=first[1]),
            TeaPair(number=first[2], suit=first[3]),
            TeaPair(number=first[4], suit=first[5]),
        ),
        hands=(kept[0] + dealt[0], kept[1] + dealt[1]),
        set_aside=tuple(second[a + b :]),
    )


def check_deals(events: Iterable[Event], seed: str) -> list[str]:
    """Check a whole log against a revealed seed.

    Returns an empty list when the commitment matches the seed, the revealed
    seed is this one, and every logged deal is exactly what the seed gives;
    otherwise sentences naming the first problems (by hand and event version).
    """
    if not valid_seed(seed):
        return ["The seed is not 64 lower-case hex characters."]
    problems: list[str] = []
    kept: list[tuple[Card, ...]] = [(), ()]
    hand_size = 5
    for version, event in enumerate(events, start=1):
        match event:
            case MatchCreated():
                hand_size = event.ruleset.hand_size
                expected = expected_commitment(event, seed)
                if expected is None:
                    problems.append(
                        f"Event {version}: unknown dealing scheme {event.dealing_scheme!r}."
                    )
                elif event.seed_commitment != expected:
                    problems.append(
                        f"Event {version}: the seed does not match the commitment "
                        "published when the match was created."
                    )
            case HandEnded():
                kept = [(), ()]
            case CardsKept():
                kept[event.seat] = event.cards
            case HandDealt():
                dealt = deal(seed, event.hand, event.dealer, (kept[0], kept[1]), hand_size)
                if dealt != event:
                    problems.append(
                        f"Event {version}: hand {event.hand} was not dealt as the seed gives."
                    )
                    return problems
            case MatchEnded():
                if event.seed != seed:
                    problems.append(f"Event {version}: the match revealed a different seed.")
            case _:
                pass
    return problems
