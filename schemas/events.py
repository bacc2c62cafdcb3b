"""Events: the only truth. Past-tense names, frozen, tagged by ``type``.

Every event carries ``v``, the schema version of its type, so the log stays
readable when a type grows. A field added to an event type defaults to
``UNSET``, which msgspec leaves out of the bytes: an event written before the
field existed re-encodes to the very bytes it was hashed from.
These are the *full* events, as stored; what a viewer may see of them is
decided in one place, ``service.engine.redact``.
"""

from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from schemas.cards import Card, RoundNo, Seat, Target, TokenKind
from schemas.receipts import Receipt
from schemas.rules import MatchTerms, Ruleset


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    v: int = 1


class TeaPair(msgspec.Struct, frozen=True, kw_only=True):
    """The two tea cards of one round's tatami pair."""

    number: Card
    suit: Card


class TokenAward(msgspec.Struct, frozen=True, kw_only=True):
    seat: Seat
    kind: TokenKind


class TargetOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What happened beside one target when its round was revealed (RULES §5)."""

    target: Target
    tea_card: Card
    cards: tuple[Card | None, Card | None]
    """The card each seat placed beside this target (None: no card)."""
    shown: bool
    """Both seats played here, so both cards were turned face up. A lone card
    is never shown: only its owner (and, after the match, everyone) sees it."""
    matched: tuple[bool | None, bool | None]
    """Per seat: did its card match the tea card (None: no card, or a lone card
    which counts as matched without being looked at)."""
    winner: Seat | None
    due: tuple[TokenAward, ...]
    """Tokens the rules award."""
    given: tuple[TokenAward, ...]
    """Tokens actually given: ``due`` less any whose supply had run out."""


class MatchCreated(_Event, frozen=True, tag="match_created"):
    match_id: str
    players: tuple[str, str]
    """Player ids by seat."""
    ruleset: Ruleset
    first_dealer: Seat
    seed_commitment: str
    """SHA-256 of the secret seed, hex (RULES §10, docs/dealing.md)."""
    ladder_id: str | None = None
    dealing_scheme: str = "matcha-deal-v1"
    terms: MatchTerms | UnsetType = UNSET
    """The ladder's terms at creation. Unset in matches created before terms were
    copied here (their ladder's row holds them: ``service.matches.facts``), and
    then absent from the event's bytes, so the hash an old event was chained
    with still verifies (a field added to an event is always ``UNSET`` by default)."""


class HandDealt(_Event, frozen=True, tag="hand_dealt"):
    hand: int
    """1-based hand number."""
    dealer: Seat
    tea: tuple[TeaPair, TeaPair, TeaPair]
    """Tea cards of rounds 1, 2, 3 (left, middle, right pair)."""
    hands: tuple[tuple[Card, ...], tuple[Card, ...]]
    """Each seat's whole hand after the deal (kept cards first, then new ones)."""
    set_aside: tuple[Card, ...]
    """The cards nobody sees during the match."""


class CardPlayed(_Event, frozen=True, tag="card_played"):
    seat: Seat
    hand: int
    round: RoundNo
    card: Card
    target: Target


class Passed(_Event, frozen=True, tag="passed"):
    seat: Seat
    hand: int
    round: RoundNo
    automatic: bool = False
    """True when the engine passed for a seat that had no legal play."""


class RoundRevealed(_Event, frozen=True, tag="round_revealed"):
    hand: int
    round: RoundNo
    outcomes: tuple[TargetOutcome, TargetOutcome]
    """Number target first, then suit target."""


class HandEnded(_Event, frozen=True, tag="hand_ended"):
    """Round 3 revealed and nobody won: cards are collected, keeping begins."""

    hand: int


class CardsKept(_Event, frozen=True, tag="cards_kept"):
    seat: Seat
    hand: int
    """The hand that just ended."""
    cards: tuple[Card, ...]


EndReason: TypeAlias = Literal[
    "qualified", "comparison", "hand_limit", "resigned", "timeout", "aborted"
]


class MatchEnded(_Event, frozen=True, tag="match_ended"):
    winner: Seat | None
    """None: a draw (possible only when the hand limit is reached)."""
    reason: EndReason
    seed: str
    """The secret seed, revealed (hex)."""
    no_show: Seat | UnsetType = UNSET
    """An abort: the seat that made no first move in time (a tournament scores it
    as that seat's forfeit). Unset on every other end, and absent from its bytes."""


class DisputeFiled(_Event, frozen=True, tag="dispute_filed"):
    dispute_id: str
    seat: Seat
    player: str
    reason: str
    receipts: tuple[Receipt, ...] | UnsetType = UNSET
    """Receipts the player presented: the audit checks the log against each (unset:
    none, and absent from the bytes of a dispute filed without any)."""


class DisputeDecided(_Event, frozen=True, tag="dispute_decided"):
    dispute_id: str
    upheld: bool
    admin: str
    reason: str


class MatchAnnulled(_Event, frozen=True, tag="match_annulled"):
    """The match stands with no result. Appended, never an edit."""

    admin: str
    reason: str
    dispute_id: str | None = None


GameEvent: TypeAlias = (
    MatchCreated
    | HandDealt
    | CardPlayed
    | Passed
    | RoundRevealed
    | HandEnded
    | CardsKept
    | MatchEnded
)
AdminEvent: TypeAlias = DisputeFiled | DisputeDecided | MatchAnnulled
Event: TypeAlias = GameEvent | AdminEvent

EVENT_TYPES: tuple[type[_Event], ...] = (
    MatchCreated,
    HandDealt,
    CardPlayed,
    Passed,
    RoundRevealed,
    HandEnded,
    CardsKept,
    MatchEnded,
    DisputeFiled,
    DisputeDecided,
    MatchAnnulled,
)

event_encoder = msgspec.json.Encoder()
event_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)


def encode_event(event: Event) -> bytes:
    """Canonical bytes of an event: the bytes hashed into the chain."""
    return event_encoder.encode(event)


def decode_event(data: bytes | str) -> Event:
    return event_decoder.decode(data)
