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

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Final

from schemas.cards import Seat
from schemas.tournaments import (
    AnnulResult,
    Arena,
    ArenaPaired,
    Bye,
    CreateTournament,
    EndTournament,
    ForbidPairing,
    Game,
    GameResult,
    JoinTournament,
    PairingForbidden,
    PairRound,
    PlayerJoined,
    PlayerReturned,
    PlayerWithdrew,
    RecordResult,
    ResultAnnulled,
    ResultRecorded,
    RoundClosed,
    RoundPaired,
    RoundRobin,
    StartTournament,
    Swiss,
    TiebreakName,
    TournamentCommand,
    TournamentCreated,
    TournamentEnded,
    TournamentEvent,
    TournamentStarted,
    WithdrawPlayer,
)
from service.errors import RuleError
from service.tournaments import arena, berger, swiss
from service.tournaments.evolve import apply
from service.tournaments.records import records
from service.tournaments.standings import scores
from service.tournaments.state import (
    TournamentSheet,
    TournamentState,
    active,
    freeze,
    round_games,
    thaw,
)
from service.tournaments.tiebreaks import NAMES

MATCH_NAMESPACE: Final = uuid.UUID("5b0c1d0e-7a3f-4c8e-9d52-6d61746368ab")
"""Match ids of tournament games are ``uuid5(MATCH_NAMESPACE, "<tournament>/<game>")``:
the same game always gets the same match, so starting it twice is harmless."""

DEFAULT_TIEBREAKS: Final[dict[type, tuple[TiebreakName, ...]]] = {
    Swiss: ("buchholz_cut1", "buchholz", "sonneborn_berger"),
    RoundRobin: ("direct_encounter", "sonneborn_berger", "wins"),
    Arena: ("sonneborn_berger", "wins"),
}
"""The usual lists (FIDE C.07 art. 4 recommends these families per system)."""

MAX_NAME: Final = 100
MAX_SWISS_ROUNDS: Final = 50
MAX_ARENA_MINUTES: Final = 7 * 24 * 60

Emit = Callable[[TournamentEvent], None]


def match_id_for(tournament_id: str, game: int) -> str:
    return str(uuid.uuid5(MATCH_NAMESPACE, f"{tournament_id}/{game}"))


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


def _tiebreaks(requested: tuple[str, ...] | None, fmt: type) -> tuple[TiebreakName, ...]:
    if requested is None:
        return DEFAULT_TIEBREAKS[fmt]
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


def _check_format(command: CreateTournament) -> None:
    match command.format:
        case Swiss(rounds=rounds, bye_points=bye_points):
            if not 1 <= rounds <= MAX_SWISS_ROUNDS:
                raise RuleError(
                    "bad_rounds", f"A Swiss has 1 to {MAX_SWISS_ROUNDS} rounds, not {rounds}."
                )
            if bye_points not in (0.0, 0.5, 1.0):
                raise RuleError(
                    "bad_bye_points", f"A bye is worth 0, 0.5 or 1 point, not {bye_points}."
                )
        case RoundRobin(cycles=cycles):
            if cycles not in (1, 2):
                raise RuleError("bad_cycles", f"A round-robin has 1 or 2 cycles, not {cycles}.")
        case Arena(minutes=minutes):
            if not 1 <= minutes <= MAX_ARENA_MINUTES:
                raise RuleError(
                    "bad_duration",
                    f"An arena lasts 1 to {MAX_ARENA_MINUTES} minutes, not {minutes}.",
                )


# -- commands ------------------------------------------------------------------------


def _create(t: TournamentSheet, c: CreateTournament, emit: Emit) -> None:
    if t.phase != "new":
        raise RuleError("tournament_exists", "A tournament with this id exists.")
    name = c.name.strip()
    if not 1 <= len(name) <= MAX_NAME:
        raise RuleError("bad_name", f"A tournament's name has 1 to {MAX_NAME} characters.")
    _check_format(c)
    tiebreaks = _tiebreaks(c.tiebreaks, type(c.format))
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
    if t.phase == "running" and isinstance(t.format, RoundRobin):
        raise RuleError(
            "tournament_started", "A round-robin takes no new players once it has started."
        )
    if t.phase == "running" and isinstance(t.format, Arena) and _arena_over(t, c.at):
        raise RuleError("arena_over", "The arena's time is up.")
    known = t.entrants.get(c.player_id)
    if known is not None and not known.withdrawn:
        raise RuleError("already_joined", "You are already in this tournament.")
    if t.max_players is not None and len(active(t)) >= t.max_players:
        raise RuleError("tournament_full", f"This tournament is full ({t.max_players} players).")
    if known is None:
        emit(PlayerJoined(at=c.at, player_id=c.player_id, rating=c.rating))
    else:
        emit(PlayerReturned(at=c.at, player_id=c.player_id))
    if t.phase == "running" and isinstance(t.format, Arena):
        _pair_waiting(t, c.at, emit)


def _withdraw(t: TournamentSheet, c: WithdrawPlayer, emit: Emit) -> None:
    _not_finished(t)
    _entrant(t, c.player_id)
    if t.entrants[c.player_id].withdrawn:
        raise RuleError("already_withdrawn", f"Player {c.player_id} has already withdrawn.")
    emit(PlayerWithdrew(at=c.at, player_id=c.player_id, by=c.by))


def _forbid(t: TournamentSheet, c: ForbidPairing, emit: Emit) -> None:
    _not_finished(t)
    a, b = sorted(c.players)
    if a == b:
        raise RuleError("same_player", "A pairing needs two different players.")
    if isinstance(t.format, RoundRobin):
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
    ends_at = None
    if isinstance(t.format, Arena):
        ends_at = c.at + timedelta(minutes=t.format.minutes)
    emit(TournamentStarted(at=c.at, seeds=seeds, ends_at=ends_at))
    if isinstance(t.format, Arena):
        _pair_waiting(t, c.at, emit)
    elif t.auto_pair or isinstance(t.format, RoundRobin):
        _pair_next(t, c.at, emit)
        _close_round_if_done(t, c.at, emit)


def _pair_round(t: TournamentSheet, c: PairRound, emit: Emit) -> None:
    _running(t)
    if isinstance(t.format, Arena):
        raise RuleError("arena_pairs_itself", "An arena pairs players as they finish.")
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
    if c.round > _total_rounds(t):
        raise RuleError("no_more_rounds", f"This tournament has {_total_rounds(t)} rounds.")
    if isinstance(t.format, RoundRobin) and (c.pairs or c.byes):
        raise RuleError("pairings_fixed", "A round-robin's pairings come from the Berger tables.")
    _pair_next(t, c.at, emit, forced=(c.pairs, c.byes))
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
    if not isinstance(t.format, Arena):
        raise RuleError("rounds_end_it", "A tournament of rounds ends with its last round.")
    if not _arena_over(t, c.at):
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
    """A game is over: close the round (and go on), or pair the arena's waiting players."""
    if t.phase == "finished":
        return
    if isinstance(t.format, Arena):
        _pair_waiting(t, at, emit)
        return
    _close_round_if_done(t, at, emit)


def _close_round_if_done(t: TournamentSheet, at: datetime, emit: Emit) -> None:
    while t.round_open and not any(not g.done for g in round_games(t, t.round)):
        emit(RoundClosed(at=at, round=t.round))
        if t.round >= _total_rounds(t) or (isinstance(t.format, Swiss) and len(active(t)) < 2):
            emit(TournamentEnded(at=at))
            return
        if t.auto_pair or isinstance(t.format, RoundRobin):
            _pair_next(t, at, emit)


def _total_rounds(t: TournamentSheet) -> int:
    match t.format:
        case Swiss(rounds=rounds):
            return rounds
        case RoundRobin(cycles=cycles):
            return berger.rounds_in(len(t.seeds), cycles)
    return 0


def _arena_over(t: TournamentSheet, at: datetime) -> bool:
    return t.ends_at is not None and at >= t.ends_at


def _new_game(
    t: TournamentSheet, number: int, round_no: int, board: int, players: tuple[str, str]
) -> Game:
    return Game(
        game=number,
        round=round_no,
        board=board,
        players=players,
        match_id=match_id_for(t.tournament_id, number),
    )


def _pair_next(
    t: TournamentSheet,
    at: datetime,
    emit: Emit,
    forced: tuple[Sequence[tuple[str, str]], Sequence[str]] = ((), ()),
) -> None:
    """Pair round ``t.round + 1`` (the caller then closes it if nothing is left to play)."""
    round_no = t.round + 1
    if isinstance(t.format, RoundRobin):
        _pair_round_robin(t, round_no, at, emit)
    elif isinstance(t.format, Swiss):
        _pair_swiss(t, round_no, at, emit, forced)


def _pair_round_robin(t: TournamentSheet, round_no: int, at: datetime, emit: Emit) -> None:
    assert isinstance(t.format, RoundRobin)
    seeds = t.seeds
    dummy = berger.table_size(len(seeds)) if len(seeds) % 2 else None
    games: list[Game] = []
    byes: list[Bye] = []
    number = len(t.games)
    for board, (a, b) in enumerate(
        berger.schedule_round(len(seeds), t.format.cycles, round_no), start=1
    ):
        if dummy in (a, b):
            resting = seeds[(b if a == dummy else a) - 1]
            byes.append(Bye(player_id=resting, points=0.0, kind="rest"))
            continue
        number += 1
        game = _new_game(t, number, round_no, board, (seeds[a - 1], seeds[b - 1]))
        # A game of a player who has withdrawn is decided at once: no match.
        gone = tuple(t.entrants[p].withdrawn for p in game.players)
        if any(gone):
            game = Game(
                game=number, round=round_no, board=board, players=game.players, match_id=None
            )
        games.append(game)
    emit(RoundPaired(at=at, round=round_no, games=tuple(games), byes=tuple(byes)))
    for game in games:
        if game.match_id is None:
            gone = tuple(t.entrants[p].withdrawn for p in game.players)
            result: GameResult = "--" if all(gone) else "-+" if gone[0] else "+-"
            emit(
                ResultRecorded(
                    at=at, game=game.game, match_id=None, result=result, reason="withdrawn"
                )
            )


def swiss_players(t: TournamentSheet | TournamentState, round_no: int) -> list[swiss.SwissPlayer]:
    """The players a Swiss round pairs, with what the pairing rules read of each."""
    recs = records(t)
    players = []
    for e in active(t):
        if e.first_round > round_no:
            continue
        rows = [r for r in recs[e.player_id] if r.kind != "playing"]
        players.append(
            swiss.SwissPlayer(
                player_id=e.player_id,
                score=round(2 * sum(r.points for r in rows)),
                opponents=frozenset(r.opponent for r in rows if r.played and r.opponent),
                seats=tuple(r.seat for r in rows if r.played and r.seat is not None),
                can_have_bye=not any(r.kind in ("bye", "forfeit_win") for r in rows),
            )
        )
    return players


def seeding_order(t: TournamentSheet | TournamentState) -> list[str]:
    """Every entrant by rating, then joining order: the ranking inside a score group."""
    return [e.player_id for e in sorted(t.entrants.values(), key=lambda e: (-e.rating, e.number))]


def _pair_swiss(
    t: TournamentSheet,
    round_no: int,
    at: datetime,
    emit: Emit,
    forced: tuple[Sequence[tuple[str, str]], Sequence[str]],
) -> None:
    assert isinstance(t.format, Swiss)
    forced_pairs, forced_byes = forced
    players = swiss_players(t, round_no)
    eligible = {p.player_id for p in players}
    taken: set[str] = set()
    for player_id in [p for pair in forced_pairs for p in pair] + list(forced_byes):
        if player_id not in eligible:
            raise RuleError(
                "not_pairable", f"Player {player_id} cannot be paired in round {round_no}."
            )
        if player_id in taken:
            raise RuleError("paired_twice", f"Player {player_id} is paired more than once.")
        taken.add(player_id)
    for a, b in forced_pairs:
        if tuple(sorted((a, b))) in t.forbidden:
            raise RuleError("pairing_forbidden", f"The pairing {a} - {b} is forbidden.")
    rest = [p for p in players if p.player_id not in taken]
    pairing = swiss.pair(rest, order=seeding_order(t), forbidden=t.forbidden)
    boards = [*forced_pairs, *pairing.boards]
    number = len(t.games)
    games = tuple(
        _new_game(t, number + board, round_no, board, pair)
        for board, pair in enumerate(boards, start=1)
    )
    byes = [
        Bye(player_id=p, points=t.format.bye_points, kind="bye")
        for p in [*forced_byes, *([pairing.bye] if pairing.bye else [])]
    ]
    byes += [Bye(player_id=p, points=0.0, kind="unpaired") for p in pairing.unpaired]
    emit(
        RoundPaired(
            at=at,
            round=round_no,
            games=games,
            byes=tuple(byes),
            forced=bool(forced_pairs or forced_byes),
        )
    )


def _pair_waiting(t: TournamentSheet, at: datetime, emit: Emit) -> None:
    """Pair the arena's waiting players, while its time lasts."""
    assert isinstance(t.format, Arena)
    if _arena_over(t, at) or len(t.waiting) < 2:
        return
    recs = records(t, only=t.waiting)
    # The waiting players in leaderboard order (points, rating, joining order).
    points = scores(t, recs)
    waiting = sorted(
        t.waiting,
        key=lambda p: (-points[p], -t.entrants[p].rating, t.entrants[p].number),
    )
    pool = []
    for player_id in waiting:
        rows = recs[player_id]
        played = [r for r in rows if r.played]
        last = rows[-1].opponent if rows else None
        pool.append(
            arena.ArenaPlayer(
                player=swiss.SwissPlayer(
                    player_id=player_id,
                    score=0,
                    opponents=frozenset(r.opponent for r in rows if r.opponent),
                    seats=tuple(r.seat for r in played if r.seat is not None),
                    can_have_bye=False,
                ),
                last_opponent=last,
            )
        )
    pairs = arena.pair_pool(pool, forbidden=t.forbidden, avoid_repeats=t.format.avoid_repeats)
    if not pairs:
        return
    number = len(t.games)
    games = tuple(
        _new_game(t, number + board, 0, board, pair) for board, pair in enumerate(pairs, start=1)
    )
    emit(ArenaPaired(at=at, games=games))
