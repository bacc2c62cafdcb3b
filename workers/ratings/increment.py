"""The incremental path: new results rated on top of the stored table, with each
system's reference implementation (``elo.EloRatings``, ``glicko2.Glicko2Ratings``); a few
rows read and written. Season boundaries among the new results apply to every
player of the ladder, so then every player is read and written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from service.evidence.guard import forged_results
from service.ratings import elo, glicko2
from service.ratings.settings import RatingSettings
from service.store import matchlog
from service.store.ops import run
from workers.ratings.recompute import GLICKO_COLUMNS, Boundaries

_ELO_COLUMNS = (
    "player_id, rating, games, wins, draws, losses, peak, reached_master, provisional, timeouts"
)


def increment(
    conn: psycopg.Connection[Any],
    ladder_id: str,
    settings: RatingSettings,
    params: dict[str, Any],
    boundaries: Boundaries = (),
    period: int | None = None,
) -> tuple[int, int | None]:
    """Rate the results in ``(after, high]``: ``(matches rated, the ladder's period)``."""
    period_us = getattr(settings, "period_us", 1)
    new = matchlog.results_between(ladder_id, params["after"], params["high"], period_us)
    results: list[Any] = run(conn, new)
    # results no service signature covers (a clone, a forged end) are not rated
    forged = set(forged_results(conn.cursor(), ladder_id, params["high"], after=params["after"]))
    results = [r for r in results if r[1] not in forged]
    if not results and not boundaries:
        return 0, period
    if isinstance(settings, glicko2.Glicko2Settings):
        return _glicko(conn, ladder_id, settings, results, boundaries, period)
    return _elo(conn, ladder_id, settings, results, boundaries), None


def _involved(
    conn: psycopg.Connection[Any],
    ladder_id: str,
    columns: str,
    results: Sequence[Any],
    everyone: bool,
) -> list[tuple[Any, ...]]:
    if everyone:
        return conn.execute(
            f"SELECT {columns} FROM ratings WHERE ladder_id = %s", (ladder_id,)
        ).fetchall()
    involved = sorted({p for r in results for p in (r[2], r[3])})
    return conn.execute(
        f"SELECT {columns} FROM ratings WHERE ladder_id = %s AND player_id = ANY(%s)",
        (ladder_id, involved),
    ).fetchall()


def _in_order(results: Sequence[Any], boundaries: Boundaries) -> list[tuple[str, Any]]:
    """Results and boundaries merged in log order (a boundary at position p comes
    after the result at p)."""
    merged: list[tuple[int, int, int, Any]] = [
        (r[0], 0, k, ("result", r)) for k, r in enumerate(results)
    ]
    merged += [
        (position, 1, k, ("boundary", fraction))
        for k, (position, fraction) in enumerate(boundaries)
    ]
    return [item for *_, item in sorted(merged)]


def _score(winner: str | None) -> float:
    return 0.5 if winner is None else (1.0 if winner == "0" else 0.0)


def _elo(
    conn: psycopg.Connection[Any],
    ladder_id: str,
    settings: elo.EloSettings,
    results: Sequence[Any],
    boundaries: Boundaries,
) -> int:
    stored = _involved(conn, ladder_id, _ELO_COLUMNS, results, bool(boundaries))
    ladder = elo.EloRatings(
        settings,
        [
            elo.PlayerRating(
                player_id=r[0],
                rating=r[1],
                games=r[2],
                wins=r[3],
                draws=r[4],
                losses=r[5],
                peak=r[6],
                reached_master=r[7],
                provisional=r[8],
                timeouts=r[9],
            )
            for r in stored
        ],
    )
    for kind, item in _in_order(results, boundaries):
        if kind == "boundary":
            if item is not None:
                ladder.soft_reset(item)
            continue
        position, match_id, p0, p1, winner, timeout, _period = item
        ladder.rate(match_id, position, p0, p1, _score(winner), bool(timeout))
    with conn.cursor() as cur:
        cur.executemany(
            f"""INSERT INTO ratings (ladder_id, {_ELO_COLUMNS})
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (ladder_id, player_id) DO UPDATE SET
                   rating = excluded.rating, games = excluded.games, wins = excluded.wins,
                   draws = excluded.draws, losses = excluded.losses, peak = excluded.peak,
                   reached_master = excluded.reached_master,
                   provisional = excluded.provisional, timeouts = excluded.timeouts""",
            [
                (
                    ladder_id,
                    p.player_id,
                    p.rating,
                    p.games,
                    p.wins,
                    p.draws,
                    p.losses,
                    p.peak,
                    p.reached_master,
                    p.provisional,
                    p.timeouts,
                )
                for p in ladder.table()
            ],
        )
        entries: dict[str, list[Any]] = {}
        for player, _match, position, _opp, score, before, after, _change in ladder.history:
            entries.setdefault(player, []).append((position, before, after, score))
        cur.executemany(
            """INSERT INTO rating_histories AS h (ladder_id, player_id, positions, before,
                                                  after, scores)
               VALUES (%s, %s, %s, %s, %s, %s)
               ON CONFLICT (ladder_id, player_id) DO UPDATE SET
                   positions = h.positions || excluded.positions,
                   before = h.before || excluded.before,
                   after = h.after || excluded.after,
                   scores = h.scores || excluded.scores""",
            [
                (
                    ladder_id,
                    player,
                    [e[0] for e in rows],
                    [e[1] for e in rows],
                    [e[2] for e in rows],
                    [e[3] for e in rows],
                )
                for player, rows in entries.items()
            ],
        )
    return len(results)


_GLICKO_STATE = GLICKO_COLUMNS.replace("ladder_id, ", "")


def _glicko(
    conn: psycopg.Connection[Any],
    ladder_id: str,
    settings: glicko2.Glicko2Settings,
    results: Sequence[Any],
    boundaries: Boundaries,
    period: int | None,
) -> tuple[int, int | None]:
    stored = _involved(conn, ladder_id, _GLICKO_STATE, results, bool(boundaries))
    players = []
    loaded_games: dict[str, int] = {}
    for r in stored:
        (
            player_id,
            rating,
            games,
            wins,
            draws,
            losses,
            peak,
            _master,
            _provisional,
            timeouts,
            rd,
            volatility,
            last,
            period_open,
            base_rating,
            base_rd,
            base_volatility,
            base_period,
            v_sum,
            d_sum,
            period_games,
        ) = r
        loaded_games[player_id] = period_games
        players.append(
            glicko2.PlayerState(
                player_id=player_id,
                rating=rating,
                rd=rd,
                volatility=volatility,
                games=games,
                wins=wins,
                draws=draws,
                losses=losses,
                timeouts=timeouts,
                peak=peak,
                period=last,
                period_open=period_open,
                base_rating=base_rating,
                base_rd=base_rd,
                base_volatility=base_volatility,
                base_period=base_period,
                v_sum=v_sum,
                d_sum=d_sum,
                period_games=period_games,
            )
        )
    ladder = glicko2.Glicko2Ratings(settings, players, period=-1 if period is None else period)
    for kind, item in _in_order(results, boundaries):
        if kind == "boundary":
            if item is None:
                ladder.close_periods()
            else:
                ladder.soft_reset(item)
            continue
        position, match_id, p0, p1, winner, timeout, clock = item
        ladder.rate(match_id, position, p0, p1, _score(winner), clock, bool(timeout))
    with conn.cursor() as cur:
        cur.executemany(
            f"""INSERT INTO ratings (ladder_id, {_GLICKO_STATE})
                VALUES (%s, {", ".join(["%s"] * 21)})
                ON CONFLICT (ladder_id, player_id) DO UPDATE SET
                {", ".join(f"{c} = excluded.{c}" for c in _GLICKO_STATE.split(", ")[1:])}""",
            [
                (
                    ladder_id,
                    p.player_id,
                    p.rating,
                    p.games,
                    p.wins,
                    p.draws,
                    p.losses,
                    p.peak,
                    False,
                    p.rd > settings.provisional_rd,
                    p.timeouts,
                    p.rd,
                    p.volatility,
                    p.period,
                    p.period_open,
                    p.base_rating,
                    p.base_rd,
                    p.base_volatility,
                    p.base_period,
                    p.v_sum,
                    p.d_sum,
                    p.period_games,
                )
                for p in ladder.table()
            ],
        )
        entries: dict[str, list[glicko2.HistoryEntry]] = {}
        for entry in ladder.history:
            entries.setdefault(entry.player_id, []).append(entry)
        rows = []
        for player in sorted(set(entries) | set(ladder.tail_rewrites)):
            new = entries.get(player, [])
            tail = ladder.tail_rewrites.get(player)
            rewrite = loaded_games.get(player, 0) if tail is not None else 0
            rows.append(
                {
                    "ladder": ladder_id,
                    "player": player,
                    "positions": [e.position for e in new],
                    "before": [e.before for e in new],
                    "after": [e.after for e in new],
                    "scores": [e.score for e in new],
                    "rd_before": [e.rd_before for e in new],
                    "rd_after": [e.rd_after for e in new],
                    "periods": [e.period for e in new],
                    "k": rewrite,
                    "tail_after": tail[0] if tail else 0.0,
                    "tail_rd": tail[1] if tail else 0.0,
                }
            )
        # An open period's stored entries take the period's new after and RD
        # after: their last ``k`` elements are replaced.
        cur.executemany(
            """INSERT INTO rating_histories AS h (ladder_id, player_id, positions, before,
                   after, scores, rd_before, rd_after, periods)
               VALUES (%(ladder)s, %(player)s, %(positions)s, %(before)s, %(after)s,
                       %(scores)s, %(rd_before)s, %(rd_after)s, %(periods)s)
               ON CONFLICT (ladder_id, player_id) DO UPDATE SET
                   positions = h.positions || excluded.positions,
                   before = h.before || excluded.before,
                   after = h.after[1:cardinality(h.after) - %(k)s::int]
                           || array_fill(%(tail_after)s::float8, ARRAY[%(k)s::int])
                           || excluded.after,
                   scores = h.scores || excluded.scores,
                   rd_before = h.rd_before || excluded.rd_before,
                   rd_after = h.rd_after[1:cardinality(h.rd_after) - %(k)s::int]
                              || array_fill(%(tail_rd)s::float8, ARRAY[%(k)s::int])
                              || excluded.rd_after,
                   periods = h.periods || excluded.periods""",
            rows,
        )
    return len(results), (ladder.period if ladder.period >= 0 else None)
