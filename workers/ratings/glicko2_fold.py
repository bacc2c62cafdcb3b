"""The Glicko-2 recompute's hot loop: a ladder's results rated period by period in
flat per-player lists, with the arithmetic of ``glicko2.Glicko2Ratings`` (same
operations, same order: same bits; tests check it).

The same machinery as the Elo fold (elo_fold.py): players are small integers
(``Roster``), each chunk's tags are appended to the players' ``array('q')`` in
C, wins, draws, losses and time-outs are counted from the tags' codes
afterwards. Per game the loop only accumulates each player's two sums; a
player's new rating is computed once per period they played in, when the
period closes (``glicko2.Glicko2Ratings`` recomputes it after every game, which gives
the same final value: it is a function of the sums only).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable
from itertools import accumulate
from operator import eq
from typing import Any, NamedTuple

from service.ratings.glicko2 import SCALE, Glicko2Settings, g, new_volatility, soft_reset
from workers.ratings.codes import tally
from workers.ratings.elo_fold import SelfMatchError
from workers.ratings.layout import little_endian


class Boundary(NamedTuple):
    """Between two chunks: a season starts (``fraction``: its soft reset) or ends
    (``fraction`` None). Either closes every open rating period."""

    fraction: float | None


PeriodChunk = tuple[list[int], list[int], list[float], list[int], list[int], list[int]]
"""An Elo ``Chunk`` and each result's rating period by the clock."""


class Run(NamedTuple):
    """One player's games of one period: where they start in the player's
    entries, and the rating and RD they entered it with."""

    start: int
    period: int
    before: float
    rd_before: float


class GlickoFold(NamedTuple):
    rating: list[float]
    rd: list[float]
    volatility: list[float]
    period: list[int]
    """The last period each player played in (-1: none)."""
    open_: list[bool]
    base: list[tuple[float, float, float, int]]
    """The ``(rating, RD, sigma, period)`` each player entered their last period with."""
    v_sum: list[float]
    d_sum: list[float]
    tags: list[array[int]]
    runs: list[list[Run]]
    afters: list[list[tuple[float, float]]]
    """Per player and run: the ``(rating, RD)`` the run ended with (or has so far)."""
    ladder_period: int


def rate_periods(
    chunks: Iterable[PeriodChunk | Boundary], players: int, settings: Glicko2Settings
) -> GlickoFold:
    """Rate blocks of results in log order, each result in its rating period."""
    s = settings
    max_rd = s.max_rd
    cap = max_rd / SCALE
    initial, initial_rd, initial_sigma = s.initial, s.initial_rd, s.initial_volatility
    rating = [initial] * players
    rd = [initial_rd] * players
    sigma = [initial_sigma] * players
    last = [-1] * players
    is_open = [False] * players
    base: list[tuple[float, float, float, int]] = [
        (initial, initial_rd, initial_sigma, -1)
    ] * players
    v_sum = [0.0] * players
    d_sum = [0.0] * players
    mu_in = [0.0] * players  # the open period's entering μ, φ, g(φ)
    phi_in = [0.0] * players
    g_in = [0.0] * players
    tags_of = [array("q") for _ in range(players)]
    runs: list[list[Run]] = [[] for _ in range(players)]
    afters: list[list[tuple[float, float]]] = [[] for _ in range(players)]
    open_now: list[int] = []
    consume = deque[None](maxlen=0).extend
    ladder_period = -1
    exp = math.exp
    sqrt = math.sqrt
    tau = s.tau

    def close() -> None:
        """The period's games are all in: rate each of its players once. They
        stay open (``is_open``, as ``glicko2.Glicko2Ratings`` keeps them) until they play
        in a later period or a season boundary closes every period."""
        # glicko2.rated written out (same operations, same order: same bits)
        for p in open_now:
            b = base[p]
            phi = phi_in[p]
            ds = d_sum[p]
            v = 1.0 / v_sum[p]
            sn = new_volatility(phi, b[2], v, v * ds, tau)
            phi_star = sqrt(phi * phi + sn * sn)
            phi_new = 1.0 / sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
            r = SCALE * ((b[0] - 1500.0) / SCALE + phi_new * phi_new * ds) + 1500.0
            d = SCALE * phi_new
            if d > max_rd:
                d = max_rd
            rating[p], rd[p], sigma[p] = r, d, sn
            afters[p].append((r, d))
        open_now.clear()

    for chunk in chunks:
        if isinstance(chunk, Boundary):
            close()
            is_open = [False] * players
            if chunk.fraction is not None:
                f = chunk.fraction
                rating = [soft_reset(r, initial, f) for r in rating]
                rd = [soft_reset(d, initial_rd, f) for d in rd]
            continue
        seat0, seat1, scores, tags0, tags1, clock = chunk
        n = len(scores)
        if not n:
            continue
        if any(map(eq, seat0, seat1)):
            raise SelfMatchError("a match with the same player in both seats")
        periods = list(accumulate(clock, max, initial=ladder_period))[1:]
        start = 0
        while start < n:
            period = periods[start]
            stop = bisect_right(periods, period, start)
            if period != ladder_period:
                close()
                ladder_period = period
            seg0, seg1 = seat0[start:stop], seat1[start:stop]
            # players entering this period now: their state at its start
            for p in {*seg0, *seg1}:
                if is_open[p] and last[p] == period:
                    continue
                is_open[p] = True
                b = base[p] = (rating[p], rd[p], sigma[p], last[p])
                idle = period - b[3] - 1 if b[3] >= 0 else 0
                phi = b[1] / SCALE
                if idle > 0:
                    phi = sqrt(phi * phi + idle * b[2] * b[2])
                if phi > cap:
                    phi = cap
                mu_in[p] = (b[0] - 1500.0) / SCALE
                phi_in[p] = phi
                g_in[p] = g(phi)
                v_sum[p] = d_sum[p] = 0.0
                last[p] = period
                runs[p].append(Run(len(tags_of[p]), period, b[0], SCALE * phi))
                open_now.append(p)
            seats = [0] * (2 * (stop - start))
            seats[0::2] = seg0
            seats[1::2] = seg1
            both = [0] * len(seats)
            both[0::2] = tags0[start:stop]
            both[1::2] = tags1[start:stop]
            consume(map(array.append, map(tags_of.__getitem__, seats), both))
            for i, j, s0 in zip(seg0, seg1, scores[start:stop], strict=True):
                gi = g_in[i]
                gj = g_in[j]
                d = mu_in[i] - mu_in[j]
                ei = 1.0 / (1.0 + exp(-gj * d))
                ej = 1.0 / (1.0 + exp(gi * d))
                v_sum[i] += gj * gj * ei * (1.0 - ei)
                d_sum[i] += gj * (s0 - ei)
                v_sum[j] += gi * gi * ej * (1.0 - ej)
                d_sum[j] += gi * ((1.0 - s0) - ej)
            start = stop
    close()
    return GlickoFold(
        rating,
        rd,
        sigma,
        last,
        is_open,
        base,
        v_sum,
        d_sum,
        tags_of,
        runs,
        afters,
        ladder_period,
    )


def history_columns(
    fold: GlickoFold, p: int
) -> tuple[array[float], array[float], array[float], array[float], array[int]]:
    """Player ``p``'s history, one entry per match: before, after, RD before,
    RD after, period (every match of one period shares them)."""
    runs = fold.runs[p]
    ends = [r.start for r in runs[1:]] + [len(fold.tags[p])]
    counts = [end - run.start for run, end in zip(runs, ends, strict=True)]
    afters = fold.afters[p]

    def repeated(typecode: str, values: list[Any]) -> array[Any]:
        out = array(typecode)
        for value, k in zip(values, counts, strict=True):
            out += array(typecode, (value,)) * k  # the run's value, once per match (in C)
        return out

    before = repeated("d", [r.before for r in runs])
    rd_before = repeated("d", [r.rd_before for r in runs])
    after = repeated("d", [a[0] for a in afters])
    rd_after = repeated("d", [a[1] for a in afters])
    periods = repeated("q", [r.period for r in runs])
    return before, after, rd_before, rd_after, periods


def table_row(fold: GlickoFold, p: int, settings: Glicko2Settings) -> tuple[object, ...]:
    """``ratings`` columns of player ``p`` (see increment.GLICKO_COLUMNS)."""
    wins, draws, losses, timeouts = tally(little_endian(fold.tags[p])[0::8])
    # the peak counts closed periods only: an open one's rating may still move
    closed = fold.afters[p][:-1] if fold.open_[p] else fold.afters[p]
    peak = max([settings.initial, *(r for r, _ in closed)])
    b = fold.base[p]
    runs = fold.runs[p]
    period_games = len(fold.tags[p]) - runs[-1].start if runs else 0
    return (
        fold.rating[p],
        len(fold.tags[p]),
        wins,
        draws,
        losses,
        peak,
        False,
        fold.rd[p] > settings.provisional_rd,
        timeouts,
        fold.rd[p],
        fold.volatility[p],
        fold.period[p],
        fold.open_[p],
        b[0],
        b[1],
        b[2],
        None if b[3] < 0 else b[3],
        fold.v_sum[p],
        fold.d_sum[p],
        period_games,
    )
