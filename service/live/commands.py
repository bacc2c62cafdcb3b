"""Commands a seat sends on its live socket: play, pass, keep and resign.

The socket path is an adapter like the HTTP routes, and takes the same road,
through the match core and back (live -> core -> live): the message becomes
the seat command's body (``service.matches.seats``, the HTTP route's too), the
body becomes the caller's seat command in ``MatchCore.run`` (same expected
version, same idempotency key rules, same receipts), and a refusal becomes
the very problem+json body the HTTP route would answer
(``service.problems.problem_of``). Who is a seat is the match core's and the
policy's answer, not this module's: a spectator's command is refused by the
same ``seat_maker`` that refuses a stranger's POST. The frames the command
causes come on the socket's stream as for any other event, redacted for this
viewer. The protocol is in docs/live.md "Commands on the socket".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from schemas.views import MatchView
from service.accounts.players import caller_of
from service.engine import is_terminal, view
from service.errors import Unauthorized
from service.evidence.receipts import receipt_of_answer
from service.live.access import Access
from service.live.wire import (
    UNREADABLE,
    AckFrame,
    CommandMessage,
    Hello,
    KeepMessage,
    PassMessage,
    PlayMessage,
    RefusedFrame,
    ResignMessage,
    ViewFrame,
    ViewMessage,
    client_decoder,
    frame_encoder,
    tag_decoder,
)
from service.matches import MatchCore, seen_by
from service.matches.seats import (
    CommandBody,
    KeepBody,
    PassBody,
    PlayBody,
    ResignBody,
    answer_view,
    seat_maker,
    visible,
)
from service.problems import problem_of

SIGN_IN = "Sign in: connect with a token to send commands."


def body_of(message: CommandMessage) -> CommandBody:
    """The seat command's body for this message (what the core is given, as for HTTP)."""
    match message:
        case PlayMessage(card=card, target=target, expected_version=version):
            return PlayBody(card=card, target=target, expected_version=version)
        case PassMessage(expected_version=version):
            return PassBody(expected_version=version)
        case KeepMessage(cards=cards, expected_version=version):
            return KeepBody(cards=cards, expected_version=version)
        case ResignMessage(expected_version=version):
            return ResignBody(expected_version=version)


def _request_id(raw: str | bytes) -> str | None:
    """The ``id`` of a message the decoder refused, if it has a readable one."""
    try:
        found = tag_decoder.decode(raw).id
    except UNREADABLE:
        return None
    return found if isinstance(found, str) and len(found) <= 100 else None


def _refused(request_id: str | None, error: Exception, instance: str) -> str:
    frame = RefusedFrame(id=request_id, problem=problem_of(error, instance))
    return frame_encoder.encode(frame).decode()


CatchUp = Callable[[str, int], Awaitable[Sequence[object]]]
"""``await catch_up(match_id, after)``: the hub's read of the rows after ``after``
(``Hub.load_after``), shared with the streams of this process that need the same
rows; the rows it reads from the store bring the core's fold forward (``Known.learn``)."""


async def _view(
    core: MatchCore, access: Access, version: int | None, catch_up: CatchUp | None = None
) -> MatchView:
    """The match as the caller sees it: what ``GET /api/matches/{id}`` answers; when the
    client names the ``version`` it knows the match is at and this process holds the
    fold at that version, and the policy shows it undelayed, that view without a read.

    A fold behind that version (another process took the command) is brought forward
    by the hub's catch-up: one read, which this seat's stream shares for its frames of
    those rows, instead of one for the stream and one for the view."""
    cached = core.cached(access.match_id)
    if cached is not None and version is not None and cached.version < version and catch_up:
        await catch_up(access.match_id, cached.version)
        cached = core.cached(access.match_id)
    if cached is not None and version is not None and cached.version == version:
        facts = await core.facts(cached.created)
        seen = seen_by(
            facts, caller_of(access.player), over=is_terminal(cached.state), channel="view"
        )
        if not seen.delay_s:
            return view(
                cached.state, seen.viewer, version=cached.version, hide_hands_in_replay=seen.hide
            )
    seen, folded, _ = await visible(core, access.match_id, caller_of(access.player), "view")
    return view(folded.state, seen.viewer, version=folded.version, hide_hands_in_replay=seen.hide)


async def answer(
    core: MatchCore,
    access: Access,
    raw: str | bytes,
    path: str,
    catch_up: CatchUp | None = None,
) -> str | None:
    """The text to send back for one client message (None: nothing, a late hello).

    ``path`` is the socket's path, the problem's ``instance``; ``catch_up`` the hub's
    shared read of a match's new rows (a view behind the client's version).
    """
    try:
        message = client_decoder.decode(raw)
    except UNREADABLE as error:
        return _refused(_request_id(raw), error, path)
    if isinstance(message, Hello):
        return None  # the token came another way already: nothing to do
    player = access.player
    try:
        if isinstance(message, ViewMessage):
            shown = await _view(core, access, message.version, catch_up)
            return frame_encoder.encode(ViewFrame(id=message.id, view=shown)).decode()
        if player is None:
            raise Unauthorized(SIGN_IN)
        accepted = await core.run(
            access.match_id,
            seat_maker(player.id, body_of(message)),
            actor=player.id,
            expected_version=message.expected_version,
            idempotency_key=message.idempotency_key,
        )
        ack = AckFrame(
            id=message.id,
            version=accepted.version,
            view=answer_view(accepted, caller_of(player)),
            receipt=receipt_of_answer(accepted),
            replayed=accepted.replayed,
        )
    except Exception as error:  # every refusal is answered, as HTTP answers it
        return _refused(message.id, error, path)
    return frame_encoder.encode(ack).decode()


__all__ = ["SIGN_IN", "answer", "body_of"]
