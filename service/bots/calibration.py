"""How well the spectators' estimate is calibrated: the table and the Brier skill.

A forecast is seat 0's *expected score* ``p0 + (1 - p0 - p1) / 2`` (a draw is
half a win); the outcome is seat 0's score, 1, 0.5 or 0. Calibrated means: of
the positions forecast near ``p``, seat 0 scored about ``p`` on average.

Brier skill ``1 - Brier / Brier(0.5)`` compares the estimate with the
forecast that knows nothing (0.5 for everyone): 0 is no better, 1 is a
prophet, below 0 is worse than knowing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec


class Bin(msgspec.Struct, frozen=True, kw_only=True):
    low: float
    high: float
    positions: int
    mean_forecast: float | None
    observed: float | None
    """Seat 0's mean score over the positions of this bin (None: no position)."""


def expected_score(p: tuple[float, float]) -> float:
    """Seat 0's expected score from each seat's chance to win."""
    return p[0] + (1.0 - p[0] - p[1]) / 2


def brier(forecasts: Sequence[float], outcomes: Sequence[float]) -> float:
    if not forecasts:
        raise ValueError("Brier score of no forecasts")
    return sum((f - o) ** 2 for f, o in zip(forecasts, outcomes, strict=True)) / len(forecasts)


def brier_skill(forecasts: Sequence[float], outcomes: Sequence[float]) -> float:
    """``1 - Brier / Brier of the constant 0.5``."""
    reference = brier([0.5] * len(outcomes), outcomes)
    return 1.0 - brier(forecasts, outcomes) / reference if reference else 0.0


def calibration_table(
    forecasts: Sequence[float], outcomes: Sequence[float], bins: int = 10
) -> list[Bin]:
    """Forecasts in ``bins`` equal slices of [0, 1] (1.0 in the last), with what happened."""
    grouped: list[list[tuple[float, float]]] = [[] for _ in range(bins)]
    for f, o in zip(forecasts, outcomes, strict=True):
        grouped[min(bins - 1, int(f * bins))].append((f, o))
    table = []
    for i, rows in enumerate(grouped):
        n = len(rows)
        table.append(
            Bin(
                low=i / bins,
                high=(i + 1) / bins,
                positions=n,
                mean_forecast=sum(f for f, _ in rows) / n if n else None,
                observed=sum(o for _, o in rows) / n if n else None,
            )
        )
    return table
