"""evolve: apply one tournament event to the state. Total over every event
type and never checks a rule (the log is the truth), so a fold never fails."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from schemas.tournaments import (
    Arena,
    ArenaPaired,
    ByeRequested,
    Game,
    PairingForbidden,
    PlayerJoined,
    PlayerReturned,
    PlayerWithdrew,
    ResultAnnulled,
    ResultRecorded,
    RoundClosed,
    RoundPaired,
    TournamentCreated,
    TournamentEnded,
    TournamentEvent,
    TournamentStarted,
)
from service.tournaments.state import (
    Entrant,
    GameRecord,
    TournamentSheet,
    TournamentState,
    freeze,
    initial_state,
    thaw,
)


def evolve(state: TournamentState, event: TournamentEvent) -> TournamentState:
    """The state after ``event`` (``state`` is left as it was)."""
    t = thaw(state)
    apply(t, event)
    return freeze(t)


def fold(events: Iterable[TournamentEvent]) -> TournamentState:
    """The state after every event, from the initial state."""
    t = thaw(initial_state())
    for event in events:
        apply(t, event)
    return freeze(t)


def apply(t: TournamentSheet, event: TournamentEvent) -> None:
    """Apply ``event`` to the mutable table ``t`` (the fold's and decide's step)."""
    t.version += 1
    match event:
        case TournamentCreated():
            t.phase = "registering"
            t.tournament_id = event.tournament_id
            t.name = event.name
            t.organiser = event.organiser
            t.ladder_id = event.ladder_id
            t.ruleset = event.ruleset
            t.format = event.format
            t.tiebreaks = event.tiebreaks
            t.auto_pair = event.auto_pair
            t.starts_at = event.starts_at
            t.max_players = event.max_players
            t.created_at = event.at
        case PlayerJoined(player_id=player_id, rating=rating):
            t.entrants[player_id] = Entrant(
                player_id=player_id,
                rating=rating,
                number=len(t.entrants) + 1,
                first_round=t.round + 1,
                entered_round=t.round + 1,
            )
            _now_free(t, player_id)
        case PlayerReturned(player_id=player_id):
            t.entrants[player_id] = msgspec.structs.replace(
                t.entrants[player_id], withdrawn=False, first_round=t.round + 1
            )
            # A player may come back while their last game is still on.
            if not any(player_id in g.players and not g.done for g in t.games.values()):
                _now_free(t, player_id)
        case PlayerWithdrew(player_id=player_id):
            t.entrants[player_id] = msgspec.structs.replace(t.entrants[player_id], withdrawn=True)
            t.waiting = tuple(p for p in t.waiting if p != player_id)
        case ByeRequested(player_id=player_id, round=round_no):
            t.requested_byes[round_no] = (*t.requested_byes.get(round_no, ()), player_id)
        case PairingForbidden(players=players):
            t.forbidden = t.forbidden | {players}
        case TournamentStarted(seeds=seeds, ends_at=ends_at):
            t.phase = "running"
            t.seeds = seeds
            t.started_at = event.at
            t.ends_at = ends_at
            if isinstance(t.format, Arena):
                t.waiting = seeds
        case RoundPaired(round=round_no, games=games, byes=byes):
            t.round = round_no
            t.round_open = True
            _add_games(t, games)
            t.byes[round_no] = byes
        case ArenaPaired(games=games):
            _add_games(t, games)
            paired = {p for g in games for p in g.players}
            t.waiting = tuple(p for p in t.waiting if p not in paired)
        case ResultRecorded():
            t.results += 1
            record = t.games[event.game]
            t.games[event.game] = msgspec.structs.replace(
                record,
                result=event.result,
                reason=event.reason,
                counted=event.counted,
                order=t.results,
            )
            if record.result is None and not record.annulled:
                _game_over(t, record)
        case ResultAnnulled(game=game):
            record = t.games[game]
            t.games[game] = msgspec.structs.replace(record, annulled=True)
            if record.result is None:
                _game_over(t, record)
        case RoundClosed():
            t.round_open = False
        case TournamentEnded():
            t.phase = "finished"
            t.ended_at = event.at
            t.waiting = ()


def _add_games(t: TournamentSheet, games: Iterable[Game]) -> None:
    for game in games:
        t.games[game.game] = GameRecord(
            game=game.game,
            round=game.round,
            board=game.board,
            players=game.players,
            match_id=game.match_id,
        )
        if game.match_id is not None:
            t.match_games[game.match_id] = game.game


def _now_free(t: TournamentSheet, player_id: str) -> None:
    """In a running arena a player who is not playing waits for a pairing."""
    if isinstance(t.format, Arena) and t.phase == "running" and player_id not in t.waiting:
        t.waiting = (*t.waiting, player_id)


def _game_over(t: TournamentSheet, record: GameRecord) -> None:
    # An arena's players go back to waiting when their game is over (the
    # engine withdraws a no-show with its own event, which removes it again).
    for player_id in record.players:
        if not t.entrants[player_id].withdrawn:
            _now_free(t, player_id)
