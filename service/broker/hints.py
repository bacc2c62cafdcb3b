"""The hints one process sends every other after a commit, over Redis pub/sub.

Nothing that crosses the broker holds a hidden card: a hint carries each new
event as the public may see it (the policy's public sight, redacted by the
engine with the match's terms: ``service.broker.publish``), which is what
every spectator frame shows; a seat's or an administrator's stream reads its
events from the store instead. Anyone who can subscribe to Redis therefore
learns no more than the public match page. The encoder and decoder are built
once, here.
"""

from datetime import datetime
from typing import Final, Literal, TypeAlias

import msgspec

from schemas.cards import Seat
from schemas.clocks import Clocks
from schemas.views import EventView


class WireEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One committed event as the public may see it (what spectators are sent)."""

    version: int
    recorded_at: datetime
    event: EventView
    actor: str | None = None
    position: int | None = None


class EventsHint(msgspec.Struct, frozen=True, kw_only=True, tag="events", tag_field="kind"):
    """Events ``first_version..last_version`` of a match were committed; ``events``
    (when present) are those events redacted for the public."""

    match_id: str
    first_version: int
    last_version: int
    events: tuple[WireEvent, ...] = ()
    clocks: Clocks | None = None
    """Both clocks after ``last_version`` (public; None: untimed)."""


class PresenceHint(msgspec.Struct, frozen=True, kw_only=True, tag="presence", tag_field="kind"):
    """Someone joined or left a match's watchers: recount from Redis."""

    match_id: str


class LobbySummary(msgspec.Struct, frozen=True, kw_only=True, tag="lobby", tag_field="kind"):
    """Public facts about a match for lobby pages: never a card."""

    match_id: str
    status: Literal["started", "progress", "finished", "annulled"]
    version: int
    ladder_id: str | None = None
    players: tuple[str, str] | None = None
    hand: int = 0
    tokens: tuple[dict[str, int], dict[str, int]] | None = None
    """Tokens won so far per seat, by kind."""
    winner: Seat | None = None
    reason: str | None = None


class OddsHint(msgspec.Struct, frozen=True, kw_only=True, tag="odds", tag_field="kind"):
    """A new estimate of each seat's chance to win, from the spectator's view at
    ``version`` (``service.bots.winprob``): public by construction."""

    match_id: str
    version: int
    p: tuple[float, float]


Hint: TypeAlias = EventsHint | PresenceHint | LobbySummary | OddsHint

hint_encoder: Final = msgspec.json.Encoder()
hint_decoder: Final = msgspec.json.Decoder(Hint)
