"""Views: what one viewer may see of a match (RULES §8).

Data only. Which fields are filled for which viewer is decided in one place,
``service.engine.redact``; a field a viewer may not see is ``None`` (or
absent from a redacted event), never a placeholder card code, so the encoded
bytes of a view never carry a hidden card.

``EventView`` reuses the event ``type`` tags: events with nothing hidden are
the events themselves; the four with hidden cards (``hand_dealt``,
``card_played``, ``round_revealed``, ``cards_kept``), ``match_ended`` (its
seed) and ``dispute_filed`` (its filer and reason) have a redacted twin here
with the same tag.
"""

from datetime import datetime
from typing import Literal, TypeAlias

import msgspec

from schemas.cards import Card, RoundNo, Seat, Target, TokenKind
from schemas.clocks import Clocks
from schemas.commands import SeatCommand
from schemas.events import (
    DisputeDecided,
    EndReason,
    HandEnded,
    MatchAnnulled,
    MatchCreated,
    Passed,
    TeaPair,
    TokenAward,
)
from schemas.receipts import Receipt
from schemas.rules import Ruleset

Viewer: TypeAlias = Literal[0, 1, "spectator", "omniscient"]
"""0 or 1: the player in that seat; a live spectator; an administrator/auditor."""

Phase: TypeAlias = Literal["new", "playing", "keeping", "ended"]


class Tokens(msgspec.Struct, frozen=True):
    """Token counts by kind (one seat's tokens, or the supply left).

    Fields in ``TOKEN_KINDS`` order, so ``Tokens(*counts)`` works too."""

    matcha: int = 0
    chawan: int = 0
    water: int = 0
    chashaku: int = 0
    chasen: int = 0

    def __getitem__(self, kind: TokenKind) -> int:
        count: int = getattr(self, kind)
        return count


class SeatView(msgspec.Struct, frozen=True, kw_only=True):
    seat: Seat
    player: str
    hand: tuple[Card, ...] | None
    """The cards in hand, or None when this viewer may only know the count."""
    hand_count: int
    tokens: Tokens
    passed: bool
    """Passed in the current round."""
    must_keep: bool
    """Between hands: this seat still has to choose which cards to keep."""
    kept_count: int | None
    """Cards kept at the last hand end (None: not chosen yet, nothing to keep, or
    still secret from this viewer until the next deal)."""
    kept: tuple[Card, ...] | None
    """Which cards were kept, when this viewer may know it."""
    qualifies: bool
    """Holds a winning combination of tokens (RULES §6, §9)."""
    tokens_to_qualify: int
    """How close to winning: the fewest more tokens that would qualify this seat."""


class TargetView(msgspec.Struct, frozen=True, kw_only=True):
    target: Target
    tea_card: Card
    occupied: tuple[bool, bool]
    """Per seat: a card lies beside this target (public, RULES §8)."""
    cards: tuple[Card | None, Card | None]
    """Per seat: the card, where this viewer may see it (else None)."""


class PairView(msgspec.Struct, frozen=True, kw_only=True):
    """One tatami pair: the tea cards and the cards beside them."""

    round: RoundNo
    number: TargetView
    suit: TargetView
    revealed: bool


class TargetOutcomeView(msgspec.Struct, frozen=True, kw_only=True):
    """``schemas.events.TargetOutcome`` as one viewer sees it."""

    target: Target
    tea_card: Card
    placed: tuple[bool, bool]
    """Per seat: a card was beside this target."""
    cards: tuple[Card | None, Card | None]
    """Per seat: the card, when visible (a lone card only to its owner)."""
    shown: bool
    matched: tuple[bool | None, bool | None]
    winner: Seat | None
    due: tuple[TokenAward, ...]
    given: tuple[TokenAward, ...]


class Result(msgspec.Struct, frozen=True, kw_only=True):
    winner: Seat | None
    """None: a draw, or no result because the match was annulled."""
    reason: EndReason | None
    annulled: bool


class _EventView(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    v: int = 1


class HandDealtView(_EventView, frozen=True, tag="hand_dealt"):
    hand: int
    dealer: Seat
    tea: tuple[TeaPair, TeaPair, TeaPair]
    hand_counts: tuple[int, int]
    hands: tuple[tuple[Card, ...] | None, tuple[Card, ...] | None]
    """Per seat: the whole hand, when visible to this viewer."""
    set_aside: tuple[Card, ...] | None


class CardPlayedView(_EventView, frozen=True, tag="card_played"):
    seat: Seat
    hand: int
    round: RoundNo
    target: Target
    card: Card | None
    """None: face down, hidden from this viewer."""


class RoundRevealedView(_EventView, frozen=True, tag="round_revealed"):
    hand: int
    round: RoundNo
    outcomes: tuple[TargetOutcomeView, TargetOutcomeView]


class MatchEndedView(_EventView, frozen=True, tag="match_ended"):
    """The end of the match; the seed only to a viewer who may re-deal every hand
    (everyone, unless the match keeps hands hidden in replays: then administrators)."""

    winner: Seat | None
    reason: EndReason
    seed: str | None


class DisputeFiledView(_EventView, frozen=True, tag="dispute_filed"):
    """A dispute as the log shows it: its filer and reason only to the filing
    seat and administrators (a player sees only their own disputes)."""

    dispute_id: str
    seat: Seat | None
    player: str | None
    reason: str | None
    receipts: tuple[Receipt, ...] | None = None
    """The receipts presented with it, to the same viewers as the reason."""


class CardsKeptView(_EventView, frozen=True, tag="cards_kept"):
    seat: Seat
    hand: int
    count: int | None
    """How many cards were kept; None while the choice is secret (RULES §7: the
    deal shows the counts)."""
    cards: tuple[Card, ...] | None
    """None: hidden from this viewer."""


EventView: TypeAlias = (
    MatchCreated
    | HandDealtView
    | CardPlayedView
    | Passed
    | RoundRevealedView
    | HandEnded
    | CardsKeptView
    | MatchEndedView
    | DisputeFiledView
    | DisputeDecided
    | MatchAnnulled
)


class LogEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One event of a match log, as served to one viewer."""

    version: int
    """1-based position of the event in its match's log."""
    event: EventView
    recorded_at: datetime
    actor: str | None = None
    """Who caused it: a player id, an admin, or None for the service."""
    position: int | None = None
    """Global position in the store, where the store has one."""


class MatchView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Everything a table UI needs, for one viewer.

    ``omit_defaults``: only ``clocks`` has a default, so an untimed match's view
    keeps the bytes it had before clocks (replay archives among them)."""

    match_id: str
    version: int
    """Number of events this view is built from."""
    viewer: Viewer
    ruleset: Ruleset
    phase: Phase
    hand: int
    round: int
    dealer: Seat | None
    to_move: Seat | None
    seats: tuple[SeatView, SeatView]
    tatami: tuple[PairView, ...]
    """The three pairs of the current hand (empty before the first deal)."""
    last_reveal: RoundRevealedView | None
    """The latest reveal of this hand, redacted for this viewer."""
    supply: Tokens
    """Tokens left to give, by kind."""
    must_keep: bool
    """This viewer (a seat) must choose which cards to keep now."""
    legal_moves: tuple[SeatCommand, ...]
    """For a seat viewer: its legal commands now (KeepCards: keep none, keep all)."""
    result: Result | None
    seed_commitment: str | None
    seed: str | None
    """The shuffle seed, once the match is over (RULES §8, §10)."""
    set_aside: tuple[Card, ...] | None
    """The two set-aside cards: to an administrator, and to everyone once the match is over."""
    clocks: Clocks | None = None
    """Both seats' clocks and the server time they were measured at (None: untimed).
    Public: everyone sees both clocks (docs/clocks.md)."""
