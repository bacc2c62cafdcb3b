"""A rated result as one small integer, the *code* of a seat, shared by every read,
fold and write of the ratings.

A seat's code is its result (2 win, 1 draw, 0 loss) plus ``ON_TIME`` (4) when
the match ended because a clock ran out (``reason="timeout"``: an ordinary
result for the ratings, counted apart on the leaderboard). ``ABORTED`` (3) marks
a no-show (``reason="aborted"``): no one's result, never rated. A result
travels as its *tag* ``position * 256 + seat 0's code`` (reads.py).
"""

from __future__ import annotations

from typing import Final

LOSS: Final = 0
DRAW: Final = 1
WIN: Final = 2
ABORTED: Final = 3
ON_TIME: Final = 4

SCORE_OF_CODE: Final = (0.0, 0.5, 1.0, 0.0, 0.0, 0.5, 1.0)
"""A seat's score from its code (an aborted match is never rated)."""
FLIP_OF_CODE: Final = (2, 0, -2, 0, 2, 0, -2)
"""Seat 1's tag minus seat 0's, by seat 0's code (seat 1's result is 2 minus seat 0's)."""


def code_of(score: float, timeout: bool = False) -> int:
    """The code of a seat that scored ``score`` (1, 0.5 or 0)."""
    return int(score * 2) + (ON_TIME if timeout else 0)


def tally(codes: bytes) -> tuple[int, int, int, int]:
    """Wins, draws, losses and losses on time among a player's codes."""
    timeouts = codes.count(LOSS + ON_TIME)
    return (
        codes.count(WIN) + codes.count(WIN + ON_TIME),
        codes.count(DRAW) + codes.count(DRAW + ON_TIME),
        codes.count(LOSS) + timeouts,
        timeouts,
    )
