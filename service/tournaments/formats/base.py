"""What every tournament format provides, and the pieces formats share.

A format is one module with one object satisfying ``FormatRules``: decide.py
asks it everything that differs between formats (how many rounds, who may
join when, how to pair, when it is over, its usual tie-breaks) and knows no
format by name. A new format is one module here, listed in ``RULES``
(``formats/__init__.py``), plus its tests. Pure, like the rest of the engine.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final, Protocol

from schemas.tournaments import Format, Game, TiebreakName, TournamentEvent
from service.tournaments.state import AnyTournament, TournamentSheet

MATCH_NAMESPACE: Final = uuid.UUID("5b0c1d0e-7a3f-4c8e-9d52-6d61746368ab")
"""Match ids of tournament games are ``uuid5(MATCH_NAMESPACE, "<tournament>/<game>")``:
the same game always gets the same match, so starting it twice is harmless."""

Emit = Callable[[TournamentEvent], None]
Forced = tuple[Sequence[tuple[str, str]], Sequence[str]]
"""The organiser's forced pairings (seat 0 first) and byes for a round."""


def match_id_for(tournament_id: str, game: int) -> str:
    return str(uuid.uuid5(MATCH_NAMESPACE, f"{tournament_id}/{game}"))


def new_game(
    t: TournamentSheet, number: int, round_no: int, board: int, players: tuple[str, str]
) -> Game:
    return Game(
        game=number,
        round=round_no,
        board=board,
        players=players,
        match_id=match_id_for(t.tournament_id, number),
    )


class FormatRules(Protocol):
    """One tournament format's rules, as decide.py uses them."""

    default_tiebreaks: tuple[TiebreakName, ...]
    """The usual order (FIDE C.07's recommendation for the system)."""
    rounds_it_pairs: bool
    """True: it pairs in rounds (the organiser may pair, results close rounds);
    False: it pairs continuously (an arena)."""
    fixed_pairings: bool
    """Pairings fixed in advance (a round-robin): each round is paired as the
    last closes, whatever ``auto_pair``, and no pairing can be forbidden."""

    def half_point_byes(self, t: TournamentSheet) -> int:
        """How many half-point byes a player may ask for (0: none)."""

    def validate(self, fmt: Format) -> None:
        """Refuse settings the format cannot run (``RuleError``)."""

    def total_rounds(self, t: AnyTournament) -> int:
        """Rounds in all (0: not in rounds)."""

    def check_entry(self, t: TournamentSheet, at: datetime) -> None:
        """Refuse a player joining the running tournament now (``RuleError``)."""

    def start(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        """The tournament just started: pair what it pairs first."""

    def pair_round(self, t: TournamentSheet, at: datetime, emit: Emit, forced: Forced) -> None:
        """Pair round ``t.round + 1`` (formats in rounds)."""

    def after_game(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        """A game ended (or a player came free): pair whoever can be paired now."""

    def is_over(self, t: TournamentSheet) -> bool:
        """After a round closed: the tournament ends here."""

    def ends_at(self, t: TournamentSheet, at: datetime) -> datetime | None:
        """When a tournament starting ``at`` ends by the clock (None: by its rounds)."""
