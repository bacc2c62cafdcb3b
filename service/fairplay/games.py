"""A ladder's matches as the fair-play signals see them: one ``Game`` per match,
from the per-match facts the store aggregates (``matchlog.fairplay_matches``),
and the same games column-wise (``Columns``) for the signals' counting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import msgspec
import numpy as np
import numpy.typing as npt

from service.store.matchlog import FairPlayMatch

EARLY_REASONS = ("resigned", "timeout")
"""How a match ends early on purpose: the loser resigns or lets the clock run out."""


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
    annulled_at: int = 0
    """The log position of its annulment (0: never annulled)."""
    moves: tuple[int, int] = (0, 0)
    """Each seat's moves timed (cards played and passes the seat chose)."""
    fast: tuple[int, int] = (0, 0)
    """Of those, the moves made within ``fast_move_s`` of the event before."""

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

    def loser(self) -> str | None:
        return None if self.winner is None else self.players[1 - self.winner]

    def winner_id(self) -> str | None:
        return None if self.winner is None else self.players[self.winner]


def games_of(rows: Iterable[FairPlayMatch]) -> list[Game]:
    """The store's per-match facts as games."""
    return [
        Game(
            match_id=r.match_id,
            players=(r.player0, r.player1),
            started_at=r.created_at,
            ended_at=r.ended_at,
            position=r.end_position or 0,
            winner=None if r.winner is None else int(r.winner),
            reason=r.reason,
            cards_played=r.cards_played,
            annulled_at=r.annulled_at or 0,
            moves=(r.moves0, r.moves1),
            fast=(r.fast0, r.fast1),
        )
        for r in rows
    ]


Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Columns:
    """The finished games in the order they ended, one array entry per game.

    Players are numbered in the order of their ids, so a pair's lower number is
    its lower id (the flags name players in the same order either way)."""

    games: list[Game]
    names: list[str]
    """Player number -> id."""
    p0: Ints
    p1: Ints
    winner: Ints
    """The winning seat, -1 for a draw."""
    winner_id: Ints
    """The winner's number, -1 for a draw."""
    early_end: npt.NDArray[np.bool_]
    """Ended by a resignation or a time-out."""
    cards: Ints
    ended: npt.NDArray[np.float64]
    """POSIX seconds."""
    moves: Ints
    """(n, 2): each seat's timed moves."""
    fast: Ints

    @property
    def size(self) -> int:
        return len(self.games)


def columns_of(games: Sequence[Game]) -> Columns:
    done = sorted((g for g in games if g.finished), key=lambda g: g.position)
    names = sorted({p for g in done for p in g.players})
    number = {p: i for i, p in enumerate(names)}
    p0 = np.fromiter((number[g.players[0]] for g in done), np.int64, len(done))
    p1 = np.fromiter((number[g.players[1]] for g in done), np.int64, len(done))
    winner = np.fromiter((-1 if g.winner is None else g.winner for g in done), np.int64, len(done))
    return Columns(
        games=done,
        names=names,
        p0=p0,
        p1=p1,
        winner=winner,
        winner_id=np.where(winner == 0, p0, np.where(winner == 1, p1, -1)),
        early_end=np.fromiter((g.reason in EARLY_REASONS for g in done), np.bool_, len(done)),
        cards=np.fromiter((g.cards_played for g in done), np.int64, len(done)),
        ended=np.fromiter(
            (g.ended_at.timestamp() if g.ended_at else 0.0 for g in done), np.float64, len(done)
        ),
        moves=np.array([g.moves for g in done], dtype=np.int64).reshape(len(done), 2),
        fast=np.array([g.fast for g in done], dtype=np.int64).reshape(len(done), 2),
    )
