"""What travels to and from a live client: the frames a stream sends, the
messages a seat's socket takes, and the socket's close codes.

(The hints between processes, which the frames are made from, are
``service.broker.hints``.) Encoders and decoders are built once, here.
"""

from typing import Annotated, Any, Final, TypeAlias

import msgspec

from schemas.bounds import Version
from schemas.cards import Card, Target
from schemas.clocks import Clocks
from service.broker.hints import LobbySummary

# ---- to clients -------------------------------------------------------------


class EventFrame(
    msgspec.Struct, frozen=True, kw_only=True, tag="event", tag_field="kind", omit_defaults=True
):
    version: int
    entry: Any
    """A ``schemas.views.LogEntry``: the event as this viewer may see it."""
    receipt: Any = None
    """To a seat, on the last event of each append: the service's signed receipt of
    the log at this version (``service.evidence.receipts.Receipt``; docs/audit.md)."""


class PresenceFrame(msgspec.Struct, frozen=True, kw_only=True, tag="presence", tag_field="kind"):
    players: tuple[bool, bool]
    """Is each seat's player connected (to any process)?"""
    spectators: int
    """How many spectator connections watch this match."""


class OddsFrame(msgspec.Struct, frozen=True, kw_only=True, tag="odds", tag_field="kind"):
    """Each seat's chance to win as a spectator may judge it after event ``version``;
    sent to spectators only, once that event has been sent to them."""

    version: int
    p: tuple[float, float]


class ClocksFrame(msgspec.Struct, frozen=True, kw_only=True, tag="clocks", tag_field="kind"):
    """Both clocks as event ``version`` left them, measured at its recorded time
    (``clocks.measured_at``); sent to every viewer once that event has been sent.
    A client counts the running clock down from ``measured_at`` (docs/clocks.md)."""

    version: int
    clocks: Clocks


class PingFrame(msgspec.Struct, frozen=True, kw_only=True, tag="ping", tag_field="kind"):
    version: int
    """The last event version this connection has been sent (for resume)."""


class LobbyFrame(msgspec.Struct, frozen=True, kw_only=True, tag="lobby", tag_field="kind"):
    summary: LobbySummary


class Hello(
    msgspec.Struct, frozen=True, kw_only=True, tag="hello", tag_field="kind",
    forbid_unknown_fields=True,
):  # fmt: skip
    """The optional first client message of a WebSocket: who is watching."""

    token: str | None = None


# ---- commands a seat sends on its socket (docs/live.md "Commands") ---------

RequestId = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
"""Chosen by the client; its ack (or refusal) names it."""
IdempotencyKey = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
"""As HTTP's ``Idempotency-Key``: a resend with the same key gets the first answer."""


class _SeatMessage(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", forbid_unknown_fields=True
):
    """What every seat command on the socket carries besides its own fields."""

    id: RequestId
    expected_version: Version | None = None
    idempotency_key: IdempotencyKey | None = None


class PlayMessage(_SeatMessage, frozen=True, tag="play"):
    card: Card
    target: Target


class PassMessage(_SeatMessage, frozen=True, tag="pass"):
    pass


class KeepMessage(_SeatMessage, frozen=True, tag="keep"):
    cards: tuple[Card, ...] = ()


class ResignMessage(_SeatMessage, frozen=True, tag="resign"):
    pass


class ViewMessage(
    msgspec.Struct, frozen=True, kw_only=True, tag="view", tag_field="kind",
    forbid_unknown_fields=True,
):  # fmt: skip
    """Ask for the match as this caller sees it now (what ``GET /api/matches/{id}`` answers)."""

    id: RequestId
    version: Version | None = None
    """The version the client knows the match is at (an ack's, a frame's): when this
    server holds the match at exactly that version, it answers without a read."""


CommandMessage: TypeAlias = PlayMessage | PassMessage | KeepMessage | ResignMessage
ClientMessage: TypeAlias = Hello | CommandMessage | ViewMessage


class AckFrame(
    msgspec.Struct, frozen=True, kw_only=True, tag="ack", tag_field="kind", omit_defaults=True
):
    """The command ``id`` was accepted: the match is at ``version`` now."""

    id: str
    version: int
    view: Any = None
    """The match as the caller sees it now (``schemas.views.MatchView``), as HTTP answers."""
    receipt: Any = None
    """The service's receipt of the log at ``version``: the one HTTP answers with."""
    replayed: bool = False
    """A resend with a known idempotency key: the first answer, nothing appended."""


class ViewFrame(msgspec.Struct, frozen=True, kw_only=True, tag="view", tag_field="kind"):
    """The answer to a ``view`` message: ``view`` is what ``GET /api/matches/{id}`` answers."""

    id: str
    view: Any


class RefusedFrame(msgspec.Struct, frozen=True, kw_only=True, tag="refused", tag_field="kind"):
    """The command ``id`` (None: a message that could not be read) was refused;
    ``problem`` is the problem+json body the HTTP route would have answered."""

    id: str | None
    problem: Any


frame_encoder: Final = msgspec.json.Encoder()
hello_decoder: Final = msgspec.json.Decoder(Hello)
client_decoder: Final = msgspec.json.Decoder(ClientMessage)

UNREADABLE: Final = (msgspec.DecodeError, RecursionError)
"""What decoding a client's message may raise: not JSON, not the shape (a
``msgspec.ValidationError`` is a ``DecodeError``), or nested deeper than msgspec's
limit, which it reports as ``RecursionError`` (1,500 brackets fit in 3 KB). Each is
the client's mistake: a ``refused`` 400, or a 4400 close for a first message."""


class _Tagged(msgspec.Struct, frozen=True):
    kind: str = ""
    id: Any = None


tag_decoder: Final = msgspec.json.Decoder(_Tagged)
"""Reads only ``kind`` and ``id`` of a message the full decoder refused (to name it)."""

# ---- WebSocket close codes (4xxx mirror HTTP statuses) ----------------------

CLOSE_BAD_REQUEST: Final = 4400
"""``since`` is not a version number, or the first message is not a hello."""
CLOSE_UNAUTHORIZED: Final = 4401
"""The token names no player."""
CLOSE_NOT_FOUND: Final = 4404
"""No match with this id."""
CLOSE_LAGGING: Final = 4429
"""The client fell too far behind: reconnect with ``since`` = the last version it got."""
CLOSE_TRY_AGAIN_LATER: Final = 1013
"""This process holds ``MATCHA_LIVE_MAX_CONNECTIONS`` live connections: retry after a pause."""
CLOSE_GOING_AWAY: Final = 1001
"""The client took no frame for ``send_timeout_s``: reconnect with ``since``."""
