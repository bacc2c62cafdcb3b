"""decide: check a tournament command against the rules and emit every event it causes.

A command's events include all its consequences: a result that completes a
round closes it and pairs the next one (or ends the tournament); a no-show
withdraws the player who did not come; a finished arena game pairs whoever
is waiting. Each event is applied at once to a scratch copy of the state
(``evolve.apply``), so every consequence is decided on the state the log
will produce. Pure: the time comes in the command (``at``), match ids are
derived from the tournament id and the game number.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from schemas.cards import Seat
from schemas.tournaments import (
    AnnulResult,
    ByeRequested,
    CreateTournament,
    EndTournament,
    ForbidPairing,
    GameResult,
    JoinTournament,
    PairingForbidden,
    PairRound,
    PlayerJoined,
    PlayerReturned,
    PlayerWithdrew,
    RecordResult,
    RequestBye,
    ResultAnnulled,
    ResultRecorded,
    RoundClosed,
    StartTournament,
    TiebreakName,
    TournamentCommand,
    TournamentCreated,
    TournamentEnded,
    TournamentEvent,
    TournamentStarted,
    WithdrawPlayer,
)
from service.errors import RuleError
from service.tournaments.evolve import apply
from service.tournaments.formats import FormatRules, match_id_for, rules_for
from service.tournaments.formats.base import Emit, Forced
from service.tournaments.formats.swiss import seeding_order
from service.tournaments.state import (
    TournamentSheet,
    TournamentState,
    active,
    freeze,
    round_games,
    thaw,
)
from service.tournaments.tiebreaks import NAMES

MAX_NAME: Final = 100

__all__ = ["decide", "match_id_for", "seeding_order", "step"]


def decide(state: TournamentState, command: TournamentCommand) -> list[TournamentEvent]:
    """The events ``command`` causes, in order; raises ``RuleError`` if the rules forbid it."""
    return step(state, command)[1]


def step(
    state: TournamentState, command: TournamentCommand
) -> tuple[TournamentState, list[TournamentEvent]]:
    """``decide`` and the state after its events."""
    t = thaw(state)
    events: list[TournamentEvent] = []

    def emit(event: TournamentEvent) -> None:
        apply(t, event)
        events.append(event)

    match command:
        case CreateTournament():
            _create(t, command, emit)
        case JoinTournament():
            _join(t, command, emit)
        case WithdrawPlayer():
            _withdraw(t, command, emit)
        case RequestBye():
            _request_bye(t, command, emit)
        case ForbidPairing():
            _forbid(t, command, emit)
        case StartTournament():
            _start(t, command, emit)
        case PairRound():
            _pair_round(t, command, emit)
        case RecordResult():
            _record(t, command, emit)
        case AnnulResult():
            _annul(t, command, emit)
        case EndTournament():
            _end_arena(t, command, emit)
    return freeze(t), events


# -- checks --------------------------------------------------------------------------


def _exists(t: TournamentSheet) -> None:
    if t.phase == "new":
        raise RuleError("no_tournament", "There is no such tournament.")


def _not_finished(t: TournamentSheet) -> None:
    _exists(t)
    if t.phase == "finished":
        raise RuleError("tournament_finished", "The tournament is over.")


def _running(t: TournamentSheet) -> None:
    _not_finished(t)
    if t.phase != "running":
        raise RuleError("tournament_not_started", "The tournament has not started yet.")


def _entrant(t: TournamentSheet, player_id: str) -> None:
    if player_id not in t.entrants:
        raise RuleError("not_in_tournament", f"Player {player_id} has not joined this tournament.")


def _rules(t: TournamentSheet) -> FormatRules:
    return rules_for(t.format)


def _tiebreaks(requested: tuple[str, ...] | None, rules: FormatRules) -> tuple[TiebreakName, ...]:
    if requested is None:
        return rules.default_tiebreaks
    chosen: list[TiebreakName] = []
    for name in requested:
        known = next((n for n in NAMES if n == name), None)
        if known is None:
            raise RuleError(
                "unknown_tiebreak",
                f"There is no tie-break named {name!r}; the tie-breaks are {', '.join(NAMES)}.",
            )
        if known in chosen:
            raise RuleError("duplicate_tiebreak", f"The tie-break {name!r} is listed twice.")
        chosen.append(known)
    return tuple(chosen)


# -- commands ------------------------------------------------------------------------


def _create(t: TournamentSheet, c: CreateTournament, emit: Emit) -> None:
    if t.phase != "new":
        raise RuleError("tournament_exists", "A tournament with this id exists.")
    name = c.name.strip()
    if not 1 <= len(name) <= MAX_NAME:
        raise RuleError("bad_name", f"A tournament's name has 1 to {MAX_NAME} characters.")
    rules = rules_for(c.format)
    rules.validate(c.format)
    tiebreaks = _tiebreaks(c.tiebreaks, rules)
    if c.starts_at is not None and c.starts_at <= c.at:
        raise RuleError("starts_in_the_past", "The start time must be in the future.")
    if c.max_players is not None and c.max_players < 2:
        raise RuleError("bad_max_players", "A tournament needs room for at least 2 players.")
    emit(
        TournamentCreated(
            at=c.at,
            tournament_id=c.tournament_id,
            name=name,
            organiser=c.organiser,
            ladder_id=c.ladder_id,
            ruleset=c.ruleset,
            format=c.format,
            tiebreaks=tiebreaks,
            auto_pair=c.auto_pair,
            starts_at=c.starts_at,
            max_players=c.max_players,
        )
    )


def _join(t: TournamentSheet, c: JoinTournament, emit: Emit) -> None:
    _not_finished(t)
    if t.phase == "running":
        _rules(t).check_entry(t, c.at)
    known = t.entrants.get(c.player_id)
    if known is not None and not known.withdrawn:
        raise RuleError("already_joined", "You are already in this tournament.")
    if t.max_players is not None and len(active(t)) >= t.max_players:
        raise RuleError("tournament_full", f"This tournament is full ({t.max_players} players).")
    if known is None:
        emit(PlayerJoined(at=c.at, player_id=c.player_id, rating=c.rating))
    else:
        emit(PlayerReturned(at=c.at, player_id=c.player_id))
    if t.phase == "running":
        _rules(t).after_game(t, c.at, emit)


def _withdraw(t: TournamentSheet, c: WithdrawPlayer, emit: Emit) -> None:
    _not_finished(t)
    _entrant(t, c.player_id)
    if t.entrants[c.player_id].withdrawn:
        raise RuleError("already_withdrawn", f"Player {c.player_id} has already withdrawn.")
    emit(PlayerWithdrew(at=c.at, player_id=c.player_id, by=c.by))


def _request_bye(t: TournamentSheet, c: RequestBye, emit: Emit) -> None:
    _not_finished(t)
    _entrant(t, c.player_id)
    rules = _rules(t)
    allowed = rules.half_point_byes(t)
    if allowed == 0:
        raise RuleError("no_half_point_byes", "This tournament grants no half-point byes.")
    total = rules.total_rounds(t)
    if not t.round < c.round <= total:
        raise RuleError(
            "bad_bye_round",
            f"A half-point bye is asked for a round not yet paired ({t.round + 1} to "
            f"{total}), not round {c.round}.",
        )
    if c.round == total:
        raise RuleError("no_final_round_bye", "No half-point bye in the final round.")
    taken = [r for r, who in t.requested_byes.items() if c.player_id in who]
    if c.round in taken:
        raise RuleError("bye_already_requested", f"You already have a bye in round {c.round}.")
    if len(taken) >= allowed:
        raise RuleError(
            "bye_limit", f"A player may ask for {allowed} half-point bye(s); you have {len(taken)}."
        )
    emit(ByeRequested(at=c.at, player_id=c.player_id, round=c.round))


def _forbid(t: TournamentSheet, c: ForbidPairing, emit: Emit) -> None:
    _not_finished(t)
    a, b = sorted(c.players)
    if a == b:
        raise RuleError("same_player", "A pairing needs two different players.")
    if _rules(t).fixed_pairings:
        raise RuleError(
            "pairings_fixed", "A round-robin's pairings are fixed: everyone meets everyone."
        )
    _entrant(t, a)
    _entrant(t, b)
    if (a, b) not in t.forbidden:
        emit(PairingForbidden(at=c.at, players=(a, b)))


def _start(t: TournamentSheet, c: StartTournament, emit: Emit) -> None:
    _not_finished(t)
    if t.phase == "running":
        raise RuleError("tournament_started", "The tournament has already started.")
    players = active(t)
    if len(players) < 2:
        raise RuleError("not_enough_players", "A tournament needs at least 2 players to start.")
    seeds = tuple(e.player_id for e in sorted(players, key=lambda e: (-e.rating, e.number)))
    rules = _rules(t)
    emit(TournamentStarted(at=c.at, seeds=seeds, ends_at=rules.ends_at(t, c.at)))
    rules.start(t, c.at, emit)
    _close_round_if_done(t, c.at, emit)


def _pair_round(t: TournamentSheet, c: PairRound, emit: Emit) -> None:
    _running(t)
    rules = _rules(t)
    if not rules.rounds_it_pairs:
        rules.pair_round(t, c.at, emit, ((), ()))  # refuses
    if c.round <= t.round:
        if c.round == t.round and t.round_open:
            raise RuleError("round_paired", f"Round {c.round} is already paired and under way.")
        raise RuleError("round_closed", f"Round {c.round} is over; it cannot be paired again.")
    if t.round_open:
        raise RuleError(
            "round_in_progress", f"Round {t.round} is still being played; pair the next after it."
        )
    if c.round != t.round + 1:
        raise RuleError("not_the_next_round", f"The next round is round {t.round + 1}.")
    total = rules.total_rounds(t)
    if c.round > total:
        raise RuleError("no_more_rounds", f"This tournament has {total} rounds.")
    rules.pair_round(t, c.at, emit, (c.pairs, c.byes))
    _close_round_if_done(t, c.at, emit)


def _record(t: TournamentSheet, c: RecordResult, emit: Emit) -> None:
    _exists(t)
    number = t.match_games.get(c.match_id)
    if number is None:
        raise RuleError("unknown_match", "This match is not a game of this tournament.")
    game = t.games[number]
    if game.done:
        raise RuleError("result_recorded", f"Game {number} already has its result.")
    result, no_shows = _result_of(c)
    counted = t.phase != "finished"
    emit(
        ResultRecorded(
            at=c.at,
            game=number,
            match_id=c.match_id,
            result=result,
            reason=c.reason,
            counted=counted,
        )
    )
    # Time-outs are ordinary losses; a seat that never showed is withdrawn
    # from the next rounds (FIDE: a forfeit without notice), as lichess does.
    for seat in no_shows:
        player_id = game.players[seat]
        if not t.entrants[player_id].withdrawn and t.phase != "finished":
            emit(PlayerWithdrew(at=c.at, player_id=player_id, by="no_show"))
    _after_game(t, c.at, emit)


def _annul(t: TournamentSheet, c: AnnulResult, emit: Emit) -> None:
    _exists(t)
    number = t.match_games.get(c.match_id)
    if number is None:
        raise RuleError("unknown_match", "This match is not a game of this tournament.")
    if t.games[number].annulled:
        return
    was_done = t.games[number].done
    emit(ResultAnnulled(at=c.at, game=number, match_id=c.match_id))
    if not was_done:
        _after_game(t, c.at, emit)


def _end_arena(t: TournamentSheet, c: EndTournament, emit: Emit) -> None:
    _running(t)
    if _rules(t).rounds_it_pairs:
        raise RuleError("rounds_end_it", "A tournament of rounds ends with its last round.")
    if t.ends_at is None or c.at < t.ends_at:
        raise RuleError("arena_running", "The arena's time is not up yet.")
    emit(TournamentEnded(at=c.at))


# -- consequences ----------------------------------------------------------------------


def _result_of(c: RecordResult) -> tuple[GameResult, tuple[Seat, ...]]:
    """The tournament result of a match's end, and the seats that did not show.

    CONTRACTS 1: an aborted match is a forfeit loss for the seat that did
    not show, or for both when the event does not say which.
    """
    if c.reason == "aborted":
        if c.forfeit == 0:
            return "-+", (0,)
        if c.forfeit == 1:
            return "+-", (1,)
        return "--", (0, 1)
    if c.winner == 0:
        return "1-0", ()
    if c.winner == 1:
        return "0-1", ()
    return "1/2-1/2", ()


def _after_game(t: TournamentSheet, at: datetime, emit: Emit) -> None:
    """A game is over: close the round (and go on), or pair whoever waits."""
    if t.phase == "finished":
        return
    rules = _rules(t)
    if not rules.rounds_it_pairs:
        rules.after_game(t, at, emit)
        return
    _close_round_if_done(t, at, emit)


def _close_round_if_done(t: TournamentSheet, at: datetime, emit: Emit) -> None:
    rules = _rules(t)
    while (
        rules.rounds_it_pairs
        and t.round_open
        and not any(not g.done for g in round_games(t, t.round))
    ):
        emit(RoundClosed(at=at, round=t.round))
        if rules.is_over(t):
            emit(TournamentEnded(at=at))
            return
        if t.auto_pair or rules.fixed_pairings:
            rules.pair_round(t, at, emit, _NO_FORCE)


_NO_FORCE: Forced = ((), ())
