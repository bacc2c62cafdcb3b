"""Commands: what a seat, an administrator or the service asks the engine to do.

Imperative names. Every command a match takes is one of these and is decided
by ``service.engine.decide``, whoever sends it: a seat's (the API fills the
seat in from the caller), a dispute's, an administrator's, the clock's.

``at`` is when the service took the command (its clock, UTC): the rules that
depend on time (the dispute window, the clocks) read it, and every event the
command causes is recorded at that instant. It is stamped by the match core,
never sent by a client, and it is not part of what an idempotency key promises.
"""

from datetime import datetime
from typing import TypeAlias

import msgspec

from schemas.cards import Card, Seat, Target
from schemas.receipts import Receipt
from schemas.rules import MatchTerms, Ruleset


class _Command(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True):
    # omit_defaults: ``at`` is the core's, never a client's; a command shown to a
    # client (a view's legal moves) leaves it out, so echoing a legal move back
    # as a request body stays valid.
    seat: Seat
    at: datetime | None = None


class PlayCard(_Command, frozen=True, tag="play_card"):
    """Play one card face down beside a target of the current round."""

    card: Card
    target: Target


class Pass(_Command, frozen=True, tag="pass"):
    """Take no more turns this round."""


class KeepCards(_Command, frozen=True, tag="keep_cards"):
    """Between hands: keep this subset of the cards still in hand (may be empty)."""

    cards: tuple[Card, ...]
    """Always named, even when empty (``omit_defaults`` would otherwise drop it)."""


class Resign(_Command, frozen=True, tag="resign"):
    """Give up the match; the opponent wins."""


class TimeOut(_Command, frozen=True, tag="time_out"):
    """The service's clock: ``seat`` ran out of time and loses (RULES §6)."""


class _MatchCommand(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True
):
    at: datetime | None = None


class FileDispute(_MatchCommand, frozen=True, tag="file_dispute"):
    """A player of a finished match disputes it (within the match's dispute window)."""

    dispute_id: str
    seat: Seat
    player: str
    reason: str
    receipts: tuple[Receipt, ...] = ()
    """The service's receipts the player holds, presented as evidence."""


class DecideDispute(_MatchCommand, frozen=True, tag="decide_dispute"):
    """An administrator upholds (the match is annulled) or rejects a dispute."""

    dispute_id: str
    upheld: bool
    admin: str
    reason: str


class AnnulMatch(_MatchCommand, frozen=True, tag="annul_match"):
    """An administrator annuls the match without a dispute: it stands with no result."""

    admin: str
    reason: str


class StartMatch(_MatchCommand, frozen=True, tag="start_match"):
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
    terms: MatchTerms | None = None
    """The ladder's terms (``None``: a match outside any ladder, the default terms)."""


SeatCommand: TypeAlias = PlayCard | Pass | KeepCards | Resign
"""What a player sends for their own seat."""
AdminCommand: TypeAlias = FileDispute | DecideDispute | AnnulMatch
"""Disputes and what administrators decide about them."""
Command: TypeAlias = StartMatch | PlayCard | Pass | KeepCards | Resign | TimeOut | AdminCommand
