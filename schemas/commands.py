"""Commands: what a seat asks the engine to do. Imperative names; each
command names the seat it acts for (the API fills it in from the caller)."""

from typing import TypeAlias

import msgspec

from schemas.cards import Card, Seat, Target
from schemas.rules import Ruleset


class _Command(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    seat: Seat


class PlayCard(_Command, frozen=True, tag="play_card"):
    """Play one card face down beside a target of the current round."""

    card: Card
    target: Target


class Pass(_Command, frozen=True, tag="pass"):
    """Take no more turns this round."""


class KeepCards(_Command, frozen=True, tag="keep_cards"):
    """Between hands: keep this subset of the cards still in hand (may be empty)."""

    cards: tuple[Card, ...] = ()


class Resign(_Command, frozen=True, tag="resign"):
    """Give up the match; the opponent wins."""


class StartMatch(msgspec.Struct, frozen=True, kw_only=True, tag="start_match", tag_field="type"):
    """Create a match and deal its first hand. Issued by the service, not a seat.

    ``seed`` is the secret 32-byte shuffle seed as 64 hex characters; only its
    SHA-256 commitment enters the log until the match ends (RULES §10).
    """

    match_id: str
    players: tuple[str, str]
    ruleset: Ruleset
    first_dealer: Seat
    seed: str
    ladder_id: str | None = None


SeatCommand: TypeAlias = PlayCard | Pass | KeepCards | Resign
Command: TypeAlias = StartMatch | PlayCard | Pass | KeepCards | Resign
