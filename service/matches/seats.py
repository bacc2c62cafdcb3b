"""A seat's commands and what its caller is shown: shared by every adapter a
seat plays through (HTTP, its live socket), so both take one road.

* The bodies of the four seat commands (``PlayBody`` ... ``ResignBody``): the
  seat is never in a body, it is the caller's seat in this match
  (``seat_maker``: the core's ``MakeCommand``, which refuses anyone else);
* ``answer_view``: what the caller of an accepted command is shown;
* ``visible``: the policy's answer for a caller of a view or a log, and the match
  as they may see it now (a delayed spectator's fold stops at the last event
  released to them).

Who sees what is the policy's answer (``service.matches.policy``), applied by
the engine's observer; nothing here chooses a viewer or knows a rule.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import msgspec

from schemas.bounds import Version
from schemas.cards import Card, Seat, Target
from schemas.commands import Command, KeepCards, Pass, PlayCard, Resign, SeatCommand
from schemas.views import MatchView
from service.engine import fold, is_terminal, view
from service.errors import Forbidden
from service.matches.core import Accepted, MakeCommand, MatchCore
from service.matches.facts import MatchFacts
from service.matches.folds import Folded
from service.matches.policy import Caller, Seen, seen_by


class PlayBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    card: Card
    target: Target
    expected_version: Version | None = None


class PassBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    expected_version: Version | None = None


class KeepBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    cards: tuple[Card, ...] = ()
    expected_version: Version | None = None


class ResignBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    expected_version: Version | None = None


CommandBody = PlayBody | PassBody | KeepBody | ResignBody


def seat_command(body: CommandBody, seat: Seat) -> SeatCommand:
    match body:
        case PlayBody(card=card, target=target):
            return PlayCard(seat=seat, card=card, target=target)
        case PassBody():
            return Pass(seat=seat)
        case KeepBody(cards=cards):
            return KeepCards(seat=seat, cards=cards)
        case ResignBody():
            return Resign(seat=seat)


def seat_maker(player_id: str, body: CommandBody) -> MakeCommand:
    """The core's ``MakeCommand`` for a seat's command: the caller's seat in the match."""

    def make(facts: MatchFacts, _: Folded) -> Command:
        seat = facts.seat_of(player_id)
        if seat is None:
            raise Forbidden("Only the two players of this match may act in it.")
        return seat_command(body, seat)

    return make


def answer_view(accepted: Accepted, caller: Caller) -> MatchView:
    """What the caller of an accepted command is shown: the policy's answer, as for a view."""
    folded = accepted.folded
    seen = seen_by(accepted.facts, caller, over=is_terminal(folded.state), channel="answer")
    return view(
        folded.state,
        seen.viewer,
        version=folded.version,
        hide_hands_in_replay=seen.hide,
        now=datetime.now(UTC),
    )


async def visible(
    core: MatchCore, match_id: str, caller: Caller, channel: Literal["view", "log"]
) -> tuple[Seen, Folded, datetime]:
    """The policy's answer for ``caller`` and the match as they may see it now
    (a delayed spectator's fold stops at the last event released to them)."""
    facts, folded = await core.current_facts(match_id)
    seen = seen_by(facts, caller, over=is_terminal(folded.state), channel=channel)
    now = datetime.now(UTC)
    if seen.delay_s and channel == "view":
        rows = await core.log(match_id)
        released = [r for r in rows if r.version == 1 or seen.released(r.recorded_at, now)]
        if len(released) != len(rows):
            state = fold(
                [r.event for r in released],
                folded.state.seed,
                times=[r.recorded_at for r in released],
            )
            folded = msgspec.structs.replace(folded, state=state, version=len(released))
    return seen, folded, now
