"""The viewer policy: who is looking at a match, and so what they may see of it.

Every outward path asks here (command answers, views, logs, WebSocket and SSE
frames, replays, records, archives, audits) and then hands the answer to the
engine's observer (``service.engine.redact`` / ``view``), which applies the
table of RULES §8. Nothing else chooses a viewer.

The policy (docs/api.md "Who sees what", docs/audit.md say the same):

* **A player of the match** sees from their seat, at once, on every channel.
  After the end they see everything, unless the match keeps hands hidden in
  replays: then still only their own cards.
* **During play everyone else is a spectator**: registered players,
  organisers, administrators and anonymous callers alike, on every channel,
  the audit included (an administrator auditing a live match checks the chain
  and reads the public log, never a hidden card). A spectator sees each event
  ``spectator_delay_s`` after it was recorded, so a watcher cannot tell a
  player the table.
* **Once the match is over** (ended or annulled: one meaning of "over"
  everywhere), an administrator sees everything (the omniscient log, the
  seed) on every channel; anyone else sees the replay: everything, unless
  the match keeps hands hidden in replays, in which case nobody but an
  administrator ever sees a card hidden in play, nor the seed that would
  re-deal them.
* The portable record carries every event with its hash, so it is whole or
  not at all: on a hide-hands match only an administrator may export it.
* The omniscient replay (every card at every step) is for administrators only.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final, Literal

import msgspec

from schemas.cards import Seat
from schemas.views import Viewer
from service.errors import Forbidden
from service.matches.facts import MatchFacts

Channel = Literal["answer", "view", "log", "stream", "replay", "record", "audit"]
"""Where the caller looks: a command's answer, the match view, its log, a live
stream, the replay, the portable record, the audit."""


class Caller(msgspec.Struct, frozen=True, kw_only=True):
    """Who asks: a signed-in player (with their roles), or nobody (anonymous)."""

    player_id: str | None = None
    roles: frozenset[str] = frozenset()

    @property
    def admin(self) -> bool:
        return "admin" in self.roles


ANONYMOUS: Final = Caller()


class Seen(msgspec.Struct, frozen=True, kw_only=True):
    """What the policy decided for one caller of one match."""

    viewer: Viewer
    """The engine's viewer: a seat, ``"spectator"`` or ``"omniscient"``."""
    hide: bool
    """The match keeps hands hidden in replays (``redact``/``view`` apply it)."""
    delay_s: float
    """Events are shown this many seconds after they were recorded (0: at once)."""
    seat: Seat | None
    """The caller's own seat in this match, if they play in it."""

    def released(self, recorded_at: datetime, now: datetime) -> bool:
        """May this caller see an event recorded at ``recorded_at``, at ``now``?"""
        return not self.delay_s or recorded_at <= now - timedelta(seconds=self.delay_s)

    def due_in(self, recorded_at: datetime, now: datetime) -> float:
        """Seconds until an event recorded at ``recorded_at`` may be shown (<= 0: now)."""
        if not self.delay_s:
            return 0.0
        return (recorded_at - now).total_seconds() + self.delay_s


def seen_by(facts: MatchFacts, caller: Caller, *, over: bool, channel: Channel) -> Seen:
    """What ``caller`` may see of the match, ``over`` or not, on ``channel``."""
    seat = facts.seat_of(caller.player_id)
    if seat is not None:
        return Seen(viewer=seat, hide=facts.terms.hide_hands_in_replay, delay_s=0.0, seat=seat)
    if over and caller.admin:
        return Seen(
            viewer="omniscient", hide=facts.terms.hide_hands_in_replay, delay_s=0.0, seat=None
        )
    return public_sight(facts, over=over)


def public_sight(facts: MatchFacts | None, *, over: bool) -> Seen:
    """What the public sees of the match: anyone who plays no seat in it and is no
    administrator of a finished match (an anonymous caller), on every channel.

    What a hint carries across the broker, the spectators' odds, a match's
    outcome and the audit of a live match show no more than this. ``facts``
    None: a log whose creation cannot be read, so no terms to judge by: every
    hand stays hidden (and nothing is delayed, as no instant can be trusted).
    """
    if facts is None:
        return Seen(viewer="spectator", hide=True, delay_s=0.0, seat=None)
    delay = 0.0 if over else float(facts.terms.spectator_delay_s)
    return Seen(viewer="spectator", hide=facts.terms.hide_hands_in_replay, delay_s=delay, seat=None)


def replay_viewer(facts: MatchFacts, caller: Caller, *, omniscient: bool | None = None) -> Viewer:
    """The viewer of a finished match's replay: ``omniscient`` True asks for the
    omniscient replay (administrators only), False for the public one; None is the
    most ``caller`` may read (the omniscient replay for an administrator, the public
    one for anyone else: what the replay's headers show, the seed included)."""
    if omniscient is None:
        omniscient = caller.admin
    if omniscient:
        if not caller.admin:
            raise Forbidden("Only an admin may watch the omniscient replay.")
        return "omniscient"
    return public_sight(facts, over=True).viewer


def check_record_export(facts: MatchFacts, caller: Caller) -> None:
    """Raise unless ``caller`` may export the whole record of this (finished) match."""
    if facts.terms.hide_hands_in_replay and not caller.admin:
        raise Forbidden(
            "This match keeps hands hidden in replays: only an admin may export its full record."
        )
