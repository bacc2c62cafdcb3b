"""Who is watching a match live: the caller's token turned into the viewer
policy's answer (``service.matches.policy``) for the ``stream`` channel.

A player of the match watches from their seat; anyone else is a spectator
(administrators too, while the match is played), delayed by the match's
spectator delay; once the match is over an administrator sees everything and
anyone else the replay the match's terms allow.
"""

from __future__ import annotations

from typing import Any

import msgspec

from service.accounts.guards import player_of_token
from service.accounts.players import Player, caller_of
from service.engine import is_terminal
from service.errors import Unauthorized, ValidationFailed
from service.matches import MatchCore, Seen, seen_by
from service.store.heads import head_salt


class Access(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    seen: Seen
    player_id: str | None
    players: tuple[str, str]
    salt: bytes | None = None
    """A seat's: its match's head salt, so its frames carry the service's receipts."""
    player: Player | None = None
    """Who holds the token (None: anonymous): the caller of commands sent on a socket."""

    @property
    def role(self) -> str:
        """How presence counts this connection: ``"0"``, ``"1"`` or ``"spectator"``."""
        viewer = self.seen.viewer
        return str(viewer) if viewer in (0, 1) else "spectator"


def parse_since(raw: str | None) -> int:
    """``since`` (or ``Last-Event-ID``): a version number >= 0; absent means 0."""
    if raw is None or raw == "":
        return 0
    text = raw.strip()
    if not text.isdigit() or len(text) > 9:
        raise ValidationFailed("since must be a version number (a whole number >= 0).")
    return int(text)


async def resolve(state: Any, match_id: str, token: str | None) -> Access:
    """The viewer of ``match_id`` holding ``token`` (None: an anonymous spectator)."""
    core: MatchCore = state.matches
    facts, folded = await core.current_facts(match_id)
    player = None
    if token is not None:
        player = await player_of_token(state, token)
        if player is None:
            raise Unauthorized("This token is not valid.")
    caller = caller_of(player)
    seen = seen_by(facts, caller, over=is_terminal(folded.state), channel="stream")
    salt = None
    if seen.viewer in (0, 1):
        salt = head_salt(await core.seed_of(match_id))
    return Access(
        match_id=match_id,
        seen=seen,
        player_id=caller.player_id,
        players=facts.players,
        salt=salt,
        player=player,
    )
