"""Steps the tournament engine tests share: build a tournament from commands,
play its games with scripted results, and check refusals."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from schemas.tournaments import (
    CreateTournament,
    Format,
    JoinTournament,
    RecordResult,
    StartTournament,
    TournamentCommand,
    TournamentEvent,
)
from service.errors import RuleError
from service.tournaments import step
from service.tournaments.state import GameRecord, TournamentState, initial_state, running_games

AT = datetime(2030, 1, 1, 18, 0, tzinfo=UTC)
TID = "t-1"

Winner = Callable[[GameRecord], int | None]
"""A scripted result: the winning seat of a game (None: a draw)."""


def draw(game: GameRecord) -> int | None:
    return None


def first_seat(game: GameRecord) -> int | None:
    return 0


def player(i: int) -> str:
    return f"p{i:02}"


def send(state: TournamentState, command: TournamentCommand) -> TournamentState:
    return step(state, command)[0]


def events_of(state: TournamentState, command: TournamentCommand) -> list[TournamentEvent]:
    return step(state, command)[1]


def refused(state: TournamentState, command: TournamentCommand) -> str:
    """The rule a command breaks (its code); the state is unchanged by construction."""
    with pytest.raises(RuleError) as caught:
        step(state, command)
    assert caught.value.detail
    return caught.value.code


def create(fmt: Format, **extra: object) -> TournamentState:
    command = CreateTournament(
        at=AT,
        tournament_id=TID,
        name="Spring cup",
        organiser="org",
        ladder_id="ladder",
        ruleset="standard",
        format=fmt,
        **extra,  # type: ignore[arg-type]
    )
    return send(initial_state(), command)


def join_all(
    state: TournamentState, players: int, ratings: list[float] | None = None
) -> TournamentState:
    for i in range(players):
        rating = ratings[i] if ratings else 2000.0 - 10 * i
        state = send(state, JoinTournament(at=AT, player_id=player(i), rating=rating))
    return state


def started_with(
    state: TournamentState, players: int, ratings: list[float] | None = None
) -> TournamentState:
    return send(join_all(state, players, ratings), StartTournament(at=AT))


def result(
    game: GameRecord, winner: int | None, at: datetime = AT, **extra: object
) -> RecordResult:
    assert game.match_id is not None
    reason = extra.pop("reason", "qualified" if winner is not None else "hand_limit")
    return RecordResult(
        at=at,
        match_id=game.match_id,
        winner=winner,
        reason=str(reason),  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )


def finish_round(state: TournamentState, winner: Winner = draw) -> TournamentState:
    for game in running_games(state):
        if game.match_id is not None:
            state = send(state, result(game, winner(game)))
    return state


def finish_all(state: TournamentState, winner: Winner = draw, limit: int = 500) -> TournamentState:
    for _ in range(limit):
        if state.phase == "finished" or not running_games(state):
            return state
        state = finish_round(state, winner)
    raise AssertionError("the tournament did not end")


def later(minutes: float) -> datetime:
    return AT + timedelta(minutes=minutes)
