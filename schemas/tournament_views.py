"""What the tournament API answers: the projections, as the organiser and the
public see them. Tournament events hide nothing, so everyone sees the same."""

from datetime import datetime

import msgspec

from schemas.cards import Seat
from schemas.tournaments import Format


class TournamentSummary(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    organiser: str
    ladder_id: str
    format: Format
    ruleset: str
    tiebreaks: list[str]
    auto_pair: bool
    max_players: int | None
    phase: str
    """``registering``, ``running`` or ``finished``."""
    round: int
    """The last round paired (0: none yet; always 0 in an arena)."""
    rounds: int | None
    """Rounds in all (None: an arena, or a round-robin not yet sized)."""
    round_open: bool
    players: int
    """Entrants who have not withdrawn."""
    starts_at: datetime | None
    started_at: datetime | None
    ends_at: datetime | None
    ended_at: datetime | None
    created_at: datetime
    version: int


class StandingView(msgspec.Struct, frozen=True, kw_only=True):
    place: int
    rank: int
    """Shared by players tied on points and every tie-break."""
    player_id: str
    name: str
    points: float
    played: int
    wins: int
    draws: int
    losses: int
    tiebreaks: list[float | None]
    """In the order of ``StandingsView.tiebreaks``."""
    rating: float
    withdrawn: bool
    on_streak: bool


class StandingsView(msgspec.Struct, frozen=True, kw_only=True):
    tournament_id: str
    version: int
    phase: str
    round: int
    tiebreaks: list[str]
    labels: list[str]
    """FIDE's short names of the tie-breaks (BH, BH-C1, SB, DE, WIN, GWIN)."""
    rows: list[StandingView]


class GameView(msgspec.Struct, frozen=True, kw_only=True):
    game: int
    round: int
    board: int
    players: tuple[str, str]
    names: tuple[str, str]
    match_id: str | None
    result: str | None
    """Seat 0 first: 1-0, 0-1, 1/2-1/2, +- / -+ (forfeit), -- (both); None: playing."""
    reason: str | None
    counted: bool
    annulled: bool


class ByeView(msgspec.Struct, frozen=True, kw_only=True):
    round: int
    player_id: str
    name: str
    points: float
    kind: str


class RoundView(msgspec.Struct, frozen=True, kw_only=True):
    round: int
    games: list[GameView]
    byes: list[ByeView]


class PairingsView(msgspec.Struct, frozen=True, kw_only=True):
    tournament_id: str
    version: int
    rounds: list[RoundView]


class CrossCellView(msgspec.Struct, frozen=True, kw_only=True):
    round: int
    kind: str
    points: float
    game: int | None = None
    opponent: str | None = None
    opponent_place: int | None = None
    seat: Seat | None = None
    counted: bool = True


class CrossRowView(msgspec.Struct, frozen=True, kw_only=True):
    place: int
    rank: int
    player_id: str
    name: str
    points: float
    cells: list[CrossCellView]


class CrosstableView(msgspec.Struct, frozen=True, kw_only=True):
    tournament_id: str
    version: int
    format: str
    rows: list[CrossRowView]


class TournamentLogEntry(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    type: str
    actor: str
    recorded_at: datetime
    event: dict[str, object]
    hash: str


class TournamentLog(msgspec.Struct, frozen=True, kw_only=True):
    tournament_id: str
    chain_ok: bool
    chain_break: str | None
    entries: list[TournamentLogEntry]
