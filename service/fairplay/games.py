"""A ladder's matches as the fair-play signals see them: one ``Game`` per match,
folded from its events (pure; the rows come from ``matchlog.fairplay_rows``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import msgspec

from schemas.events import CardPlayed, MatchAnnulled, MatchCreated, MatchEnded, Passed
from service.store.events import StoredEvent


class Game(msgspec.Struct, kw_only=True):
    match_id: str
    players: tuple[str, str]
    """By seat."""
    started_at: datetime
    ended_at: datetime | None = None
    position: int = 0
    """The log position of its end (0 while it is played)."""
    winner: int | None = None
    """The winning seat; None for a draw or while it is played."""
    reason: str | None = None
    cards_played: int = 0
    think: tuple[list[float], list[float]] = msgspec.field(default_factory=lambda: ([], []))
    """Each seat's seconds from the event before its move to the move (its cards
    played and passes; the engine's automatic passes left out), in order."""
    last_at: datetime | None = None
    annulled_at: int = 0
    """The log position of its annulment (0: never annulled)."""

    @property
    def annulled(self) -> bool:
        return self.annulled_at > 0

    @property
    def finished(self) -> bool:
        """Ended with a result that counts: not aborted, not annulled."""
        return self.ended_at is not None and self.reason != "aborted" and not self.annulled

    def counted_at(self, position: int) -> bool:
        """It counted for the ratings when the log ended at ``position``."""
        return (
            self.ended_at is not None
            and self.reason != "aborted"
            and 0 < self.position <= position
            and not 0 < self.annulled_at <= position
        )

    def seat_of(self, player_id: str) -> int:
        return self.players.index(player_id)

    def loser(self) -> str | None:
        return None if self.winner is None else self.players[1 - self.winner]

    def winner_id(self) -> str | None:
        return None if self.winner is None else self.players[self.winner]


def games_of(rows: Iterable[StoredEvent]) -> list[Game]:
    """Every match of the rows, in the order they were created."""
    games: dict[str, Game] = {}
    for row in rows:
        event = row.event
        if isinstance(event, MatchCreated):
            games[row.match_id] = Game(
                match_id=row.match_id,
                players=event.players,
                started_at=row.recorded_at,
                last_at=row.recorded_at,
            )
            continue
        game = games.get(row.match_id)
        if game is None:
            continue
        before, game.last_at = game.last_at, row.recorded_at
        if isinstance(event, CardPlayed | Passed):
            if isinstance(event, CardPlayed):
                game.cards_played += 1
            if not (isinstance(event, Passed) and event.automatic) and before is not None:
                game.think[event.seat].append((row.recorded_at - before).total_seconds())
        elif isinstance(event, MatchEnded):
            game.ended_at = row.recorded_at
            game.position = row.position
            game.winner = event.winner
            game.reason = event.reason
        elif isinstance(event, MatchAnnulled):
            game.annulled_at = row.position
    return list(games.values())
