"""FIDE's own tie-break exercise (TEC, "Exercises in tie-breaking", IA Mario Held,
rev. 2403220900, C.07-2023): the Swiss individual crosstable of its §2.1
(16 players, 5 rounds, with half-point byes, pairing-allocated byes, forfeits,
a zero-point bye and a withdrawal) and FIDE's published answers.

Cell notation, as the paper writes it: ``+W9`` beat 9 as White, ``=B13`` drew
13 as Black, ``-W4`` lost to 4 as White, ``=BYE`` a half-point bye asked for,
``+BYE`` a pairing-allocated bye, ``+F14`` / ``-F11`` a forfeit won / lost,
``--`` not there: for player 12 (rounds 4-5) a withdrawal, for player 14
(round 4) a zero-point bye before coming back.
"""

from __future__ import annotations

import pytest

from service.tournaments import tiebreaks
from service.tournaments.records import RoundRecord

CROSSTABLE: dict[int, list[str]] = {
    1: ["+W9", "=B13", "=W2", "+B15", "=W4"],
    2: ["+B10", "+W7", "=B1", "+W16", "=B3"],
    3: ["=W11", "+B6", "+W8", "=B4", "=W2"],
    4: ["+B12", "=BYE", "+W13", "=W3", "=B1"],
    5: ["-W13", "-B15", "+W11", "=B7", "+W10"],
    6: ["-B14", "-W3", "+BYE", "+W10", "+B8"],
    7: ["+W15", "-B2", "-B16", "=W5", "-B11"],
    8: ["=B16", "+W14", "-B3", "+W13", "-W6"],
    9: ["-B1", "-W10", "=BYE", "-F11", "+BYE"],
    10: ["-W2", "+B9", "-W15", "-B6", "-B5"],
    11: ["=B3", "-W16", "-B5", "+F9", "+W7"],
    12: ["-W4", "+BYE", "+F14", "--", "--"],
    13: ["+B5", "=W1", "-B4", "-B8", "-W14"],
    14: ["+W6", "-B8", "-F12", "--", "+B13"],
    15: ["-B7", "+W5", "+B10", "-W1", "-B16"],
    16: ["=W8", "+B11", "+W7", "-B2", "+W15"],
}


def _record(cell: str, round_no: int) -> RoundRecord:
    if cell == "--":
        return RoundRecord(round=round_no, kind="absent", points=0.0)
    points = {"+": 1.0, "=": 0.5, "-": 0.0}[cell[0]]
    rest = cell[1:]
    if rest == "BYE":
        kind = "bye" if points == 1.0 else "half"
        return RoundRecord(round=round_no, kind=kind, points=points)  # type: ignore[arg-type]
    if rest[0] == "F":
        kind = "forfeit_win" if points == 1.0 else "forfeit_loss"
        return RoundRecord(round=round_no, kind=kind, points=points, opponent=rest[1:])  # type: ignore[arg-type]
    kind = {1.0: "win", 0.5: "draw", 0.0: "loss"}[points]
    return RoundRecord(
        round=round_no,
        kind=kind,  # type: ignore[arg-type]
        points=points,
        opponent=rest[1:],
        seat=0 if rest[0] == "W" else 1,
    )


RECORDS = {
    str(p): [_record(c, k) for k, c in enumerate(cells, 1)] for p, cells in CROSSTABLE.items()
}
SCORES = {p: tiebreaks.score(rows) for p, rows in RECORDS.items()}
CTX = tiebreaks.Context(
    scores=SCORES,
    opponent_scores={p: tiebreaks.adjusted_score(rows) for p, rows in RECORDS.items()},
    ratings=dict.fromkeys(RECORDS, 2000.0),
    max_score=5.0,
)

# FIDE's published answers (exercises 1-8, 27-30, 32).
BH = {1: 12.5, 2: 13.0, 3: 15.5, 4: 15.0, 5: 8.5, 6: 12.0, 7: 14.5, 8: 13.5, 9: 9.0, 10: 13.0,
      11: 13.5, 12: 11.5, 13: 14.0, 14: 11.0, 15: 12.0, 16: 12.5}  # fmt: skip
BH_C1 = {1: 11.0, 3: 13.0, 4: 11.5, 5: 7.5, 7: 12.5, 8: 12.0, 9: 7.5, 11: 12.0, 12: 9.5,
         13: 12.0, 14: 9.0, 15: 11.0, 16: 11.0}  # fmt: skip
SB = {1: 8.0, 2: 9.5, 3: 10.5, 4: 9.75, 5: 4.25, 6: 6.5, 7: 3.25, 8: 5.25, 9: 2.25, 10: 1.5,
      11: 5.75, 12: 4.0, 13: 4.25, 14: 4.5, 15: 3.5, 16: 7.25}  # fmt: skip
PS = {1: 11.0, 2: 13.0, 3: 11.0, 4: 11.5, 5: 5.0, 6: 6.0, 7: 6.0, 8: 8.5, 9: 2.5, 10: 4.0,
      11: 5.5, 12: 7.0, 13: 7.0, 14: 6.0, 15: 7.0, 16: 10.5}  # fmt: skip
WIN = {1: 2, 2: 3, 3: 2, 4: 2, 5: 2, 6: 3, 7: 1, 8: 2, 9: 1, 10: 1, 11: 2, 12: 2, 13: 1, 14: 2,
       15: 2, 16: 3}  # fmt: skip
WON = {1: 2, 2: 3, 3: 2, 4: 2, 5: 2, 6: 2, 7: 1, 8: 2, 9: 0, 10: 1, 11: 1, 12: 0, 13: 1, 14: 2,
       15: 2, 16: 3}  # fmt: skip
BPG = {1: 2, 2: 3, 3: 2, 4: 2, 5: 2, 6: 2, 7: 3, 8: 2, 9: 1, 10: 3, 11: 2, 12: 0, 13: 3, 14: 2,
       15: 3, 16: 2}  # fmt: skip


def _each(name: str, expected: dict[int, float]) -> dict[int, tuple[float, float]]:
    compute = tiebreaks.SCALARS[name]  # type: ignore[index]
    got = {p: compute(RECORDS[str(p)], SCORES[str(p)], CTX) for p in expected}
    return {p: (got[p], v) for p, v in expected.items() if got[p] != v}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("buchholz", BH),
        ("buchholz_cut1", BH_C1),
        ("sonneborn_berger", SB),
        ("progressive", PS),
        ("wins", WIN),
        ("games_won", WON),
        ("games_second_seat", BPG),
    ],
)
def test_given_fides_tie_break_exercise_then_every_published_answer_matches(
    name: str, expected: dict[int, float]
) -> None:
    assert _each(name, expected) == {}


def test_given_the_exercise_then_the_three_answers_the_old_rule_got_wrong_match() -> None:
    # The old rule counted every forfeit loss and absence of an opponent as a
    # draw: player 8 had BH 14.5 and BH-C1 13, player 1 BH 13.
    bh = tiebreaks.SCALARS["buchholz"]
    cut1 = tiebreaks.SCALARS["buchholz_cut1"]
    assert bh(RECORDS["8"], SCORES["8"], CTX) == 13.5
    assert cut1(RECORDS["8"], SCORES["8"], CTX) == 12.0
    assert bh(RECORDS["1"], SCORES["1"], CTX) == 12.5


def test_given_a_withdrawal_then_only_the_rounds_after_the_last_count_as_draws() -> None:
    # 12 withdrew after round 3 (2 points): seen as 2 + ½ + ½; 14 missed
    # round 4 and came back: its zero-point bye counts 0.
    assert CTX.opponent_scores["12"] == 3.0
    assert CTX.opponent_scores["14"] == SCORES["14"] == 2.0


def test_given_the_exercise_then_the_medians_cut_a_voluntary_round_first() -> None:
    m1 = tiebreaks.SCALARS["buchholz_median1"]
    # 2: 1.0 1.5 3.5 3.5 3.5, less 1.0 and a 3.5 = 8.5
    assert m1(RECORDS["2"], SCORES["2"], CTX) == 8.5
    # 4: the half-point bye (own 3.5) is cut first, then a 3.5: 3.0 + 1.5 + 3.5
    assert m1(RECORDS["4"], SCORES["4"], CTX) == 8.0
    # 12: 4's 3.5 and four rounds on its own 2.0 (a withdrawal cut first), less the 3.5
    assert m1(RECORDS["12"], SCORES["12"], CTX) == 6.0
