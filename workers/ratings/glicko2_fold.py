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
from collections.abc import Iterable
from itertools import accumulate
from operator import eq
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

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
    v_sum = np.zeros(players)  # the open period's two sums, per player
    d_sum = np.zeros(players)
    mu_in = [0.0] * players  # the open period's entering μ, φ, g(φ)
    phi_in = [0.0] * players
    g_in = [0.0] * players
    played = np.zeros(players, dtype=np.int64)  # games so far, per player
    seat_runs: list[NDArray[np.intp]] = []  # every game's two seats, in log order
    tag_runs: list[NDArray[np.int64]] = []  # and their tags
    runs: list[list[Run]] = [[] for _ in range(players)]
    afters: list[list[tuple[float, float]]] = [[] for _ in range(players)]
    open_now: list[int] = []
    ladder_period = -1
    sqrt = math.sqrt
    tau = s.tau

    def close() -> None:
        """The period's games are all in: rate each of its players once. They
        stay open (``is_open``, as ``glicko2.Glicko2Ratings`` keeps them) until they play
        in a later period or a season boundary closes every period."""
        # glicko2.rated written out (same operations, same order: same bits)
        v_sums, d_sums = v_sum.tolist(), d_sum.tolist()
        for p in open_now:
            b = base[p]
            phi = phi_in[p]
            ds = d_sums[p]
            v = 1.0 / v_sums[p]
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
            games = played.tolist()
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
                runs[p].append(Run(games[p], period, b[0], SCALE * phi))
                open_now.append(p)
            seats = np.empty(2 * (stop - start), dtype=np.intp)
            seats[0::2] = seg0
            seats[1::2] = seg1
            both = np.empty(len(seats), dtype=np.int64)
            both[0::2] = tags0[start:stop]
            both[1::2] = tags1[start:stop]
            seat_runs.append(seats)
            tag_runs.append(both)
            played += np.bincount(seats, minlength=players)
            _accumulate(v_sum, d_sum, g_in, mu_in, seg0, seg1, scores[start:stop])
            start = stop
    close()
    return GlickoFold(
        rating,
        rd,
        sigma,
        last,
        is_open,
        base,
        v_sum.tolist(),
        d_sum.tolist(),
        _by_player(seat_runs, tag_runs, players),
        runs,
        afters,
        ladder_period,
    )


def _by_player(
    seat_runs: list[NDArray[np.intp]], tag_runs: list[NDArray[np.int64]], players: int
) -> list[array[int]]:
    """Each player's tags in log order: the games' tags grouped by player at the end
    with one stable sort, not appended to 10,000 arrays two million times (the
    recompute's Python CPU 6.1 -> 5.5 s on 1,000,000 matches, load 6.5-9)."""
    if not seat_runs:
        return [array("q") for _ in range(players)]
    seats = np.concatenate(seat_runs)
    grouped = np.concatenate(tag_runs)[np.argsort(seats, kind="stable")].tobytes()
    ends = np.cumsum(np.bincount(seats, minlength=players)).tolist()
    tags_of = []
    start = 0
    for end in ends:
        tags = array("q")
        tags.frombytes(grouped[8 * start : 8 * end])
        tags_of.append(tags)
        start = end
    return tags_of


def _accumulate(
    v_sum: NDArray[np.float64],
    d_sum: NDArray[np.float64],
    g_in: list[float],
    mu_in: list[float],
    seat0: list[int],
    seat1: list[int],
    scores: list[float],
) -> None:
    """Add a run of one period's games to both players' sums, game by game in log
    order, as this loop (``glicko2.Glicko2Ratings.rate``'s terms) would::

        for i, j, s0 in zip(seat0, seat1, scores):
            gi, gj, d = g_in[i], g_in[j], mu_in[i] - mu_in[j]
            ei = 1.0 / (1.0 + exp(-gj * d))
            ej = 1.0 / (1.0 + exp(gi * d))
            v_sum[i] += gj * gj * ei * (1.0 - ei)
            d_sum[i] += gj * (s0 - ei)
            v_sum[j] += gi * gi * ej * (1.0 - ej)
            d_sum[j] += gi * ((1.0 - s0) - ej)

    Column by column with numpy instead: the same IEEE operations in the same
    order per element (numpy's float64 ``+ - * /`` are the CPU's, as Python's),
    ``exp`` is libm's (``math.exp`` mapped over the column: numpy's own need not
    give the same bits), and ``np.add.at`` adds the terms to the sums one at a
    time in index order, seat 0's term of a game before seat 1's: the same
    sequence of additions per player, so the same bits (tests/workers/
    test_glicko2.py checks every sum against the reference). Measured on the
    1,000,000-match ladder at load 9-10, the recompute's Python
    CPU 8.4 -> 6.1 s (Elo's 6.0 beside it)."""
    n = len(seat0)
    i = np.array(seat0, dtype=np.intp)
    j = np.array(seat1, dtype=np.intp)
    s0 = np.array(scores, dtype=np.float64)
    g = np.array(g_in)
    mu = np.array(mu_in)
    gi = g[i]
    gj = g[j]
    d = mu[i] - mu[j]
    ei = 1.0 / (1.0 + _libm_exp(-gj * d))
    ej = 1.0 / (1.0 + _libm_exp(gi * d))
    seats = np.empty(2 * n, dtype=np.intp)
    seats[0::2] = i
    seats[1::2] = j
    terms = np.empty(2 * n)
    terms[0::2] = gj * gj * ei * (1.0 - ei)
    terms[1::2] = gi * gi * ej * (1.0 - ej)
    np.add.at(v_sum, seats, terms)
    terms[0::2] = gj * (s0 - ei)
    terms[1::2] = gi * ((1.0 - s0) - ej)
    np.add.at(d_sum, seats, terms)


def _libm_exp(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``math.exp`` of each element (the C library's, as the reference's)."""
    return np.fromiter(map(math.exp, x.tolist()), dtype=np.float64, count=len(x))


HistoryBlock = tuple[
    NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
    NDArray[np.int64],
]  # fmt: skip
"""before, after, RD before, RD after, period: one entry per match, players one after
the other."""


def history_block(fold: GlickoFold, players: list[int]) -> HistoryBlock:
    """The history of ``players``, one entry per match (every match of a run, one
    player's games of one period, shares its before and after): each run's values
    repeated by numpy, not an array step per player, run and column (the history's
    layout and COPY: the recompute's Python CPU 5.5 -> 4.65 s on 1,000,000 matches,
    load 5-6.5)."""
    runs = [run for p in players for run in fold.runs[p]]
    afters = [after for p in players for after in fold.afters[p]]
    counts = []
    for p in players:
        theirs = fold.runs[p]
        ends = [r.start for r in theirs[1:]]
        ends.append(len(fold.tags[p]))
        counts += [end - run.start for run, end in zip(theirs, ends, strict=True)]
    repeats = np.array(counts, dtype=np.intp)

    def column(values: list[Any], dtype: type) -> Any:
        return np.repeat(np.array(values, dtype=dtype), repeats)

    return (
        column([r.before for r in runs], np.float64),
        column([a[0] for a in afters], np.float64),
        column([r.rd_before for r in runs], np.float64),
        column([a[1] for a in afters], np.float64),
        column([r.period for r in runs], np.int64),
    )


def history_columns(fold: GlickoFold, p: int) -> HistoryBlock:
    """Player ``p``'s history (``history_block`` of one player)."""
    return history_block(fold, [p])


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
