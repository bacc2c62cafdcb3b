"""Tie-breaks on a small crosstable worked out by hand (FIDE C.07 definitions)."""

from __future__ import annotations

from tournament_engine import AT, create, refused, send, started_with

from schemas.tournaments import CreateTournament, PairRound, RecordResult, Swiss
from service.tournaments import standings
from service.tournaments.records import RoundRecord
from service.tournaments.state import TournamentState, initial_state
from service.tournaments.tiebreaks import direct_encounter

ALL = ("direct_encounter", "buchholz_cut1", "buchholz", "sonneborn_berger", "wins", "games_won")
A, B, C, D, E = "p00", "p01", "p02", "p03", "p04"


def _game(state: TournamentState, a: str, b: str) -> str:
    game = next(g for g in state.games.values() if g.players == (a, b) and g.result is None)
    assert game.match_id is not None
    return game.match_id


def _crosstable() -> TournamentState:
    """Five players, three rounds, pairings forced by the organiser:

    round 1: A-B 1-0, C-D ½-½, E bye (1 point)
    round 2: C-A 1-0, E-B 0-1, D bye (1 point)
    round 3: A-E +- (E did not show: a forfeit), B-D ½-½, C bye (1 point)
    """
    state = started_with(create(Swiss(rounds=3), auto_pair=False, tiebreaks=ALL), 5)
    rounds = [
        ([(A, B, 0), (C, D, None)], [E]),
        ([(C, A, 0), (E, B, 1)], [D]),
        ([(A, E, "no-show"), (B, D, None)], [C]),
    ]
    for number, (pairs, byes) in enumerate(rounds, start=1):
        state = send(
            state,
            PairRound(
                at=AT, round=number, pairs=tuple((a, b) for a, b, _ in pairs), byes=tuple(byes)
            ),
        )
        for a, b, winner in pairs:
            match_id = _game(state, a, b)
            if winner == "no-show":
                command = RecordResult(
                    at=AT, match_id=match_id, winner=None, reason="aborted", forfeit=1
                )
            else:
                command = RecordResult(
                    at=AT,
                    match_id=match_id,
                    winner=winner,  # type: ignore[arg-type]
                    reason="qualified" if winner is not None else "hand_limit",
                )
            state = send(state, command)
    assert state.phase == "finished"
    return state


def test_the_hand_computed_crosstable() -> None:
    rows = {r.player_id: r for r in standings(_crosstable())}
    # Scores: A 1+0+1(forfeit win) = 2; B 0+1+½ = 1.5; C ½+1+1(bye) = 2.5;
    #         D ½+1(bye)+½ = 2;        E 1(bye)+0+0(forfeit loss) = 1.
    assert {p: r.points for p, r in rows.items()} == {A: 2, B: 1.5, C: 2.5, D: 2, E: 1}
    # Opponents' scores count as scored (C.07 art. 16): E's forfeit loss in
    # round 3, its last round, counts its 0 (only rounds after a player's
    # last round, a withdrawal, would count as draws). E counts 1.
    #
    # Buchholz, one contribution per round; an unplayed round (bye, forfeit)
    # contributes the player's own score:
    #   A: B 1.5 + C 2.5 + own 2 (forfeit win)  = 6.0
    #   B: A 2   + E 1   + D 2                  = 5.0
    #   C: D 2   + A 2   + own 2.5 (bye)        = 6.5
    #   D: C 2.5 + own 2 (bye) + B 1.5          = 6.0
    #   E: own 1 (bye) + B 1.5 + own 1 (forfeit) = 3.5
    bh = {A: 6.0, B: 5.0, C: 6.5, D: 6.0, E: 3.5}
    # Cut-1 drops the least contribution; a voluntarily unplayed round's first:
    #   A 6.0-1.5 = 4.5; B 5.0-1 = 4.0; C 6.5-2 = 4.5; D 6.0-1.5 = 4.5;
    #   E cuts its forfeit loss's 1: 3.5-1 = 2.5
    cut1 = {A: 4.5, B: 4.0, C: 4.5, D: 4.5, E: 2.5}
    # Sonneborn-Berger: points scored in the round times that contribution:
    #   A: 1 * 1.5 + 0 * 2.5 + 1 * 2           = 3.5
    #   B: 0 * 2 + 1 * 1 + ½ * 2               = 2.0
    #   C: ½ * 2 + 1 * 2 + 1 * 2.5             = 5.5
    #   D: ½ * 2.5 + 1 * 2 + ½ * 1.5           = 4.0
    #   E: 1 * 1 + 0 * 1.5 + 0 * 1             = 1.0
    sb = {A: 3.5, B: 2.0, C: 5.5, D: 4.0, E: 1.0}
    # Wins: rounds worth a win's points, played or not (forfeit win, full bye):
    #   A 2 (R1, R3), B 1, C 2 (R2, R3 bye), D 1 (R2 bye), E 1 (R1 bye).
    # Games won over the board: A 1, B 1, C 1, D 0, E 0.
    wins = {A: 2, B: 1, C: 2, D: 1, E: 1}
    games_won = {A: 1, B: 1, C: 1, D: 0, E: 0}
    for p, r in rows.items():
        _de, got_cut1, got_bh, got_sb, got_wins, got_gwin = r.tiebreaks
        assert (got_cut1, got_bh, got_sb, got_wins, got_gwin) == (
            cut1[p],
            bh[p],
            sb[p],
            wins[p],
            games_won[p],
        ), p
    # A and D are tied on 2 and never met: direct encounter cannot apply
    # (0 each), nor can Cut-1 (4.5 each) or Buchholz (6.0 each); SB does:
    # D 4.0 before A 3.5. C leads alone, so its DE is not shown.
    assert [r.player_id for r in standings(_crosstable())] == [C, D, A, B, E]
    assert [r.rank for r in standings(_crosstable())] == [1, 2, 3, 4, 5]
    assert rows[A].tiebreaks[0] == 0 and rows[D].tiebreaks[0] == 0
    assert rows[C].tiebreaks[0] is None


def _games(*played: tuple[str, str, float]) -> dict[str, list[RoundRecord]]:
    """Records from (player, opponent, points) triples, both sides."""
    out: dict[str, list[RoundRecord]] = {}
    for n, (p, q, points) in enumerate(played, start=1):
        kind = {1.0: "win", 0.5: "draw", 0.0: "loss"}
        out.setdefault(p, []).append(
            RoundRecord(round=n, kind=kind[points], points=points, opponent=q)
        )  # type: ignore[arg-type]
        out.setdefault(q, []).append(
            RoundRecord(round=n, kind=kind[1 - points], points=1 - points, opponent=p)
        )  # type: ignore[arg-type]
    return out


def test_direct_encounter_ranks_by_the_points_among_the_tied_when_all_met() -> None:
    # X beat Y, Y beat Z, X drew Z: X 1.5, Y 1, Z 0.5 among themselves.
    records = _games(("X", "Y", 1.0), ("Y", "Z", 1.0), ("X", "Z", 0.5))
    order, scores = direct_encounter(["Z", "Y", "X"], records)
    assert order == [["X"], ["Y"], ["Z"]]
    assert scores == {"X": 1.5, "Y": 1.0, "Z": 0.5}


def test_direct_encounter_keeps_a_tie_among_equal_scores() -> None:
    # a cycle: each beat one and lost to one
    records = _games(("X", "Y", 1.0), ("Y", "Z", 1.0), ("Z", "X", 1.0))
    order, _ = direct_encounter(["X", "Y", "Z"], records)
    assert order == [["X", "Y", "Z"]]


def test_direct_encounter_ranks_first_who_cannot_be_caught_when_not_all_met() -> None:
    # X beat Y and Z; Y and Z never met: nobody can reach X's 2 points.
    # Y and Z then stay tied on DE (they have not met: 0 each, 1 to play).
    records = _games(("X", "Y", 1.0), ("X", "Z", 1.0))
    order, _ = direct_encounter(["Y", "Z", "X"], records)
    assert order == [["X"], ["Y", "Z"]]
    # With only one win X could be caught by Z: no ranking at all.
    records = _games(("X", "Y", 1.0))
    assert direct_encounter(["X", "Y", "Z"], records)[0] == [["X", "Y", "Z"]]


def test_an_unknown_tiebreak_name_is_refused_with_the_list_of_names() -> None:
    command = CreateTournament(
        at=AT,
        tournament_id="t",
        name="x",
        organiser="o",
        ladder_id="l",
        ruleset="standard",
        format=Swiss(rounds=3),
        tiebreaks=("buchholz", "coin_toss"),
    )
    assert refused(initial_state(), command) == "unknown_tiebreak"
