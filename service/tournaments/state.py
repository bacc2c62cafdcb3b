"""The state of one tournament, folded from its events.

``TournamentState`` is immutable from the outside: a frozen Struct whose
mappings nobody writes to. The engine works on ``TournamentSheet``, a mutable twin with
the same fields (the director's working sheet, written as the tournament goes),
so a fold or a decision copies the state once (``thaw``) instead of once per
event, the way the match engine does with its ``Table``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Literal, TypeAlias

import msgspec

from schemas.tournaments import Bye, Format, GameResult, TiebreakName

TournamentPhase: TypeAlias = Literal["new", "registering", "running", "finished"]


class Entrant(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    rating: float
    number: int
    """Joining order, 1-based (breaks rating ties when seeding)."""
    first_round: int
    """The first round the entrant may be paired in (a late Swiss entry, a return)."""
    withdrawn: bool = False
    entered_round: int = 1
    """The first round after the player first joined: earlier rounds are a
    late entry's zero-point byes."""


class GameRecord(msgspec.Struct, frozen=True, kw_only=True):
    game: int
    round: int
    board: int
    players: tuple[str, str]
    match_id: str | None
    result: GameResult | None = None
    reason: str | None = None
    counted: bool = True
    annulled: bool = False
    order: int = 0
    """The how-manieth result of the tournament this was (arena streaks follow it)."""

    @property
    def done(self) -> bool:
        """The game needs nothing more: it has a result or was annulled."""
        return self.result is not None or self.annulled


class TournamentState(msgspec.Struct, frozen=True, kw_only=True):
    """One tournament after some events. Fields are documented on ``TournamentSheet``."""

    phase: TournamentPhase = "new"
    version: int = 0
    tournament_id: str = ""
    name: str = ""
    organiser: str = ""
    ladder_id: str = ""
    ruleset: str = ""
    format: Format | None = None
    tiebreaks: tuple[TiebreakName, ...] = ()
    auto_pair: bool = True
    starts_at: datetime | None = None
    max_players: int | None = None
    created_at: datetime | None = None
    entrants: Mapping[str, Entrant] = msgspec.field(default_factory=dict)
    forbidden: frozenset[tuple[str, str]] = frozenset()
    seeds: tuple[str, ...] = ()
    round: int = 0
    round_open: bool = False
    games: Mapping[int, GameRecord] = msgspec.field(default_factory=dict)
    match_games: Mapping[str, int] = msgspec.field(default_factory=dict)
    byes: Mapping[int, tuple[Bye, ...]] = msgspec.field(default_factory=dict)
    started_at: datetime | None = None
    ends_at: datetime | None = None
    ended_at: datetime | None = None
    waiting: tuple[str, ...] = ()
    results: int = 0
    requested_byes: Mapping[int, tuple[str, ...]] = msgspec.field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class TournamentSheet:
    """The mutable twin of ``TournamentState`` the engine folds into.

    * ``phase``: ``new`` (no event), ``registering`` (created, not started),
      ``running``, ``finished``;
    * ``entrants``: every player who ever joined, in joining order;
    * ``forbidden``: pairs (in id order) the organiser forbade;
    * ``seeds``: the entrants at the start in seeding order;
    * ``round``: the last round paired (0: none); ``round_open``: it is
      still being played;
    * ``games``: every pairing by game number; ``match_games``: match id ->
      game number; ``byes``: per round, who had no game;
    * ``waiting``: an arena's players waiting for a pairing, in the order
      they became free;
    * ``results``: results recorded so far (orders them for arena streaks);
    * ``requested_byes``: per round, the players granted a half-point bye.
    """

    phase: TournamentPhase = "new"
    version: int = 0
    tournament_id: str = ""
    name: str = ""
    organiser: str = ""
    ladder_id: str = ""
    ruleset: str = ""
    format: Format | None = None
    tiebreaks: tuple[TiebreakName, ...] = ()
    auto_pair: bool = True
    starts_at: datetime | None = None
    max_players: int | None = None
    created_at: datetime | None = None
    entrants: dict[str, Entrant] = field(default_factory=dict)
    forbidden: frozenset[tuple[str, str]] = frozenset()
    seeds: tuple[str, ...] = ()
    round: int = 0
    round_open: bool = False
    games: dict[int, GameRecord] = field(default_factory=dict)
    match_games: dict[str, int] = field(default_factory=dict)
    byes: dict[int, tuple[Bye, ...]] = field(default_factory=dict)
    started_at: datetime | None = None
    ends_at: datetime | None = None
    ended_at: datetime | None = None
    waiting: tuple[str, ...] = ()
    results: int = 0
    requested_byes: dict[int, tuple[str, ...]] = field(default_factory=dict)


_FIELDS = tuple(f.name for f in fields(TournamentSheet))
_MAPPINGS = ("entrants", "games", "match_games", "byes", "requested_byes")

AnyTournament: TypeAlias = TournamentState | TournamentSheet
"""Either form, for the read-only helpers (records, standings, pairing inputs)."""


def thaw(state: TournamentState) -> TournamentSheet:
    """A mutable copy (the mappings are copied; their values are immutable)."""
    values = {name: getattr(state, name) for name in _FIELDS}
    for name in _MAPPINGS:
        values[name] = dict(values[name])
    return TournamentSheet(**values)


def freeze(t: TournamentSheet) -> TournamentState:
    """The immutable state of ``t``; ``t`` must not be changed afterwards."""
    return TournamentState(**{name: getattr(t, name) for name in _FIELDS})


def initial_state() -> TournamentState:
    return TournamentState()


def is_terminal(state: AnyTournament) -> bool:
    return state.phase == "finished"


def active(state: AnyTournament) -> list[Entrant]:
    """Entrants who have not withdrawn, in joining order."""
    return [e for e in state.entrants.values() if not e.withdrawn]


def running_games(state: AnyTournament) -> list[GameRecord]:
    return [g for g in state.games.values() if not g.done]


def round_games(state: AnyTournament, round_no: int) -> list[GameRecord]:
    """The games of a round. A round's games are numbered after the previous
    round's, so they are read from the end, not by scanning every game."""
    found: list[GameRecord] = []
    for number in range(len(state.games), 0, -1):  # games are numbered 1, 2, 3 ...
        game = state.games[number]
        if game.round != round_no:
            if found or game.round < round_no:
                break
            continue
        found.append(game)
    return found[::-1]
