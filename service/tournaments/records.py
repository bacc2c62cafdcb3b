"""Each entrant's record, round by round (or game by game in an arena), read
from the state: what standings, tie-breaks, Swiss pairing and the crosstable
are computed from.

Kinds of record, and what FIDE C.07 calls them: ``win``, ``draw``, ``loss``
are games played over the board; ``forfeit_win``, ``bye`` (pairing-allocated),
``unpaired``, ``rest`` (the round-robin dummy) and ``annulled`` are unplayed
rounds the player did not choose; ``forfeit_loss``, ``double_forfeit``,
``half`` (a half-point bye asked for), ``late`` (a round before a late entry:
a zero-point bye) and ``absent`` (after a withdrawal) are *voluntarily
unplayed rounds* (VUR). ``playing``: the game is not over yet.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final, Literal, TypeAlias

import msgspec

from schemas.cards import SEATS, Seat
from schemas.tournaments import Arena, GameResult
from service.tournaments.state import AnyTournament, GameRecord

Kind: TypeAlias = Literal[
    "win", "draw", "loss", "forfeit_win", "forfeit_loss", "double_forfeit", "bye", "unpaired",
    "rest", "half", "late", "absent", "annulled", "playing",
]  # fmt: skip

PLAYED: Final = frozenset({"win", "draw", "loss"})
VOLUNTARILY_UNPLAYED: Final = frozenset(
    {"forfeit_loss", "double_forfeit", "half", "late", "absent"}
)

_KINDS: Final[dict[GameResult, tuple[Kind, Kind]]] = {
    "1-0": ("win", "loss"),
    "0-1": ("loss", "win"),
    "1/2-1/2": ("draw", "draw"),
    "+-": ("forfeit_win", "forfeit_loss"),
    "-+": ("forfeit_loss", "forfeit_win"),
    "--": ("double_forfeit", "double_forfeit"),
}
"""A result, as the kind of record it is for seat 0 and for seat 1."""

POINTS: Final[dict[Kind, float]] = {
    "win": 1.0,
    "forfeit_win": 1.0,
    "draw": 0.5,
}
"""Game points of a kind (every other kind but ``bye`` is worth 0)."""


class RoundRecord(msgspec.Struct, frozen=True, kw_only=True):
    round: int
    """0 in an arena."""
    kind: Kind
    points: float
    """Game points: 1 a win, 0.5 a draw, 0 a loss; a bye its points."""
    game: int | None = None
    opponent: str | None = None
    seat: Seat | None = None
    counted: bool = True
    """False: an arena game that ended after the arena (shown, not scored)."""

    @property
    def played(self) -> bool:
        return self.kind in PLAYED

    @property
    def voluntary(self) -> bool:
        return self.kind in VOLUNTARILY_UNPLAYED


def game_kind(game: GameRecord, seat: Seat) -> Kind:
    if game.annulled:
        return "annulled"
    if game.result is None:
        return "playing"
    return _KINDS[game.result][seat]


def _game_record(game: GameRecord, seat: Seat) -> RoundRecord:
    kind = game_kind(game, seat)
    return RoundRecord(
        round=game.round,
        kind=kind,
        points=POINTS.get(kind, 0.0),
        game=game.game,
        opponent=game.players[1 - seat],
        seat=seat,
        counted=game.counted,
    )


def records(
    state: AnyTournament, only: Collection[str] | None = None
) -> dict[str, list[RoundRecord]]:
    """Every entrant's records in order (entrants in joining order); ``only``:
    just these players' (an arena pairing reads the few who wait, not all).

    Swiss and round-robin: one record per round paired so far; a round still
    being played holds ``playing`` for an unfinished game and nothing for an
    entrant who is not in it. Arena: one record per game, in pairing order.
    """
    out: dict[str, list[RoundRecord]] = {p: [] for p in (state.entrants if only is None else only)}
    if isinstance(state.format, Arena):
        for game in state.games.values():
            for seat in SEATS:
                rows = out.get(game.players[seat])
                if rows is not None:
                    rows.append(_game_record(game, seat))
        return out
    by_round: dict[tuple[int, str], RoundRecord] = {}
    for game in state.games.values():
        for seat in SEATS:
            by_round[game.round, game.players[seat]] = _game_record(game, seat)
    for round_no, byes in state.byes.items():
        for bye in byes:
            by_round[round_no, bye.player_id] = RoundRecord(
                round=round_no, kind=bye.kind, points=bye.points
            )
    for player_id, rows in out.items():
        for round_no in range(1, state.round + 1):
            found = by_round.get((round_no, player_id))
            if found is not None:
                rows.append(found)
            elif round_no < state.entrants[player_id].entered_round:
                rows.append(RoundRecord(round=round_no, kind="late", points=0.0))
            elif round_no < state.round or not state.round_open:
                rows.append(RoundRecord(round=round_no, kind="absent", points=0.0))
    return out
