"""A ladder's matches as the fair-play signals see them: one ``Game`` per match,
from the per-match facts the store aggregates (``matchlog.fairplay_matches``),
and the same games column-wise (``Columns``) for the signals' counting."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
import numpy as np
import numpy.typing as npt

from service.store.matchlog import FairPlayLog

EARLY_REASONS = ("resigned", "timeout")
"""How a match ends early on purpose: the loser resigns or lets the clock run out."""


class Game(msgspec.Struct, kw_only=True):
    match_id: str
    players: tuple[str, str]
    """By seat."""
    started_at: datetime | None = None
    """When it was created (the log's time)."""
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
    ended_s: float = 0.0
    """Its end as the store's POSIX seconds (exactly the float a rating period is cut from)."""

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


def games_of(log: FairPlayLog) -> list[Game]:
    """The ladder's ended matches as games, in the order they ended (what the
    refunds recompute over; the signals count ``columns_of_log`` instead)."""
    games = []
    for i, match_id in enumerate(log.match_ids):
        cards, m0, m1, f0, f1 = log.moves.get(match_id, (0, 0, 0, 0, 0))
        code = log.ended_code[i]
        games.append(
            Game(
                match_id=match_id,
                players=(log.player0[i], log.player1[i]),
                started_at=datetime.fromtimestamp(log.created_at[i], UTC),
                ended_at=datetime.fromtimestamp(log.ended_at[i], UTC),
                ended_s=log.ended_at[i],
                position=log.ended_position[i],
                winner=None if code & 3 == 2 else code & 3,
                reason="aborted" if code & 8 else ("resigned" if code & 4 else "qualified"),
                cards_played=cards,
                annulled_at=log.annulled.get(match_id, 0),
                moves=(m0, m1),
                fast=(f0, f1),
            )
        )
    return games


Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Columns:
    """The finished games in the order they ended, one array entry per game.

    Players are numbered in the order of their ids, so a pair's lower number is
    its lower id (the flags name players in the same order either way)."""

    match_ids: list[str]
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
    lasted: npt.NDArray[np.float64]
    """Seconds from its creation to its end."""
    moves: Ints
    """(n, 2): each seat's timed moves."""
    fast: Ints

    @property
    def size(self) -> int:
        return len(self.match_ids)


def _lasted(g: Game) -> float:
    if g.started_at is None or g.ended_at is None:
        return float("inf")  # unknown: never early by the clock
    return (g.ended_at - g.started_at).total_seconds()


def columns_of(games: Sequence[Game]) -> Columns:
    done = sorted((g for g in games if g.finished), key=lambda g: g.position)
    names = sorted({p for g in done for p in g.players})
    number = {p: i for i, p in enumerate(names)}
    p0 = np.fromiter((number[g.players[0]] for g in done), np.int64, len(done))
    p1 = np.fromiter((number[g.players[1]] for g in done), np.int64, len(done))
    winner = np.fromiter((-1 if g.winner is None else g.winner for g in done), np.int64, len(done))
    return Columns(
        match_ids=[g.match_id for g in done],
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
        lasted=np.fromiter((_lasted(g) for g in done), np.float64, len(done)),
        moves=np.array([g.moves for g in done], dtype=np.int64).reshape(len(done), 2),
        fast=np.array([g.fast for g in done], dtype=np.int64).reshape(len(done), 2),
    )


def _numbered(player0: list[str], player1: list[str]) -> tuple[list[str], Ints, Ints]:
    """Players numbered in the order of their ids: (ids by number, seat 0's, seat 1's)."""
    names = sorted(set(player0) | set(player1))
    number = {p: i for i, p in enumerate(names)}.__getitem__
    first = np.fromiter(map(number, player0), np.int64, len(player0))
    second = np.fromiter(map(number, player1), np.int64, len(player1))
    return names, first, second


def columns_of_log(log: FairPlayLog) -> Columns:
    """The same columns as ``columns_of(games_of(log))``, straight from the arrays:
    the matches that finished (ended, not aborted, not annulled), in the order they
    ended (the log's order already: no sort)."""
    code = np.frombuffer(log.ended_code, dtype=np.int64)
    keep = code & 8 == 0
    if log.annulled:
        keep &= np.fromiter((m not in log.annulled for m in log.match_ids), np.bool_, len(code))
    at = np.nonzero(keep)[0]
    names, all_p0, all_p1 = _numbered(log.player0, log.player1)
    p0, p1 = all_p0[at], all_p1[at]
    seat = code[at] & 3
    winner = np.where(seat == 2, -1, seat)
    ids = log.match_ids if len(at) == len(code) else [log.match_ids[i] for i in at.tolist()]
    timed = np.zeros((len(ids), 5), dtype=np.int64)  # cards, moves 0, 1, fast 0, 1
    if log.moves:
        found = [(k, log.moves[m]) for k, m in enumerate(ids) if m in log.moves]
        if found:
            timed[[k for k, _ in found]] = [v for _, v in found]
    return Columns(
        match_ids=ids,
        names=names,
        p0=p0,
        p1=p1,
        winner=winner,
        winner_id=np.where(winner == 0, p0, np.where(winner == 1, p1, -1)),
        early_end=(code[at] & 4) > 0,
        cards=timed[:, 0],
        ended=np.frombuffer(log.ended_at, dtype=np.float64)[at],
        lasted=(
            np.frombuffer(log.ended_at, dtype=np.float64)[at]
            - np.frombuffer(log.created_at, dtype=np.float64)[at]
        ),
        moves=timed[:, 1:3],
        fast=timed[:, 3:5],
    )
