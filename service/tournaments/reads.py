"""Reads of the tournament projections, as the API's views (schemas/tournament_views.py).

Names come from ``players`` at read time (a player renamed shows the new
name); a player id with no account row shows as its id (the simulator's).
"""

from __future__ import annotations

from typing import Any

import msgspec
from psycopg import AsyncConnection

from schemas.tournament_views import (
    ByeView,
    CrossCellView,
    CrossRowView,
    CrosstableView,
    GameView,
    PairingsView,
    RoundView,
    StandingsView,
    StandingView,
    TournamentLog,
    TournamentLogEntry,
    TournamentSummary,
)
from schemas.tournaments import Format
from service.errors import NotFound
from service.tournaments import store
from service.tournaments.tiebreaks import LABELS

_SUMMARY_COLUMNS = (
    "id, name, organiser, ladder_id, settings, phase, round, rounds, round_open, players,"
    " starts_at, started_at, ends_at, ended_at, created_at, version"
)


def _summary(row: tuple[Any, ...]) -> TournamentSummary:
    (
        id_,
        name,
        organiser,
        ladder_id,
        settings,
        phase,
        round_no,
        rounds,
        round_open,
        players,
        starts_at,
        started_at,
        ends_at,
        ended_at,
        created_at,
        version,
    ) = row
    return TournamentSummary(
        id=id_,
        name=name,
        organiser=organiser,
        ladder_id=ladder_id,
        format=msgspec.convert(settings["format"], Format),
        ruleset=settings["ruleset"],
        tiebreaks=list(settings["tiebreaks"]),
        auto_pair=settings["auto_pair"],
        max_players=settings.get("max_players"),
        phase=phase,
        round=round_no,
        rounds=rounds,
        round_open=round_open,
        players=players,
        starts_at=starts_at,
        started_at=started_at,
        ends_at=ends_at,
        ended_at=ended_at,
        created_at=created_at,
        version=version,
    )


async def summary(conn: AsyncConnection[Any], tournament_id: str) -> TournamentSummary:
    cur = await conn.execute(
        f"SELECT {_SUMMARY_COLUMNS} FROM tournaments WHERE id = %s", (tournament_id,)
    )
    row = await cur.fetchone()
    if row is None:
        raise NotFound("No tournament has this id.")
    return _summary(row)


async def list_summaries(
    conn: AsyncConnection[Any], phase: str | None, limit: int
) -> list[TournamentSummary]:
    cur = await conn.execute(
        f"SELECT {_SUMMARY_COLUMNS} FROM tournaments WHERE (%s::text IS NULL OR phase = %s)"
        " ORDER BY created_at DESC, id LIMIT %s",
        (phase, phase, limit),
    )
    return [_summary(row) for row in await cur.fetchall()]


async def standings(conn: AsyncConnection[Any], tournament_id: str) -> StandingsView:
    head = await summary(conn, tournament_id)
    cur = await conn.execute(
        """SELECT s.place, s.rank, s.player_id, coalesce(p.name, s.player_id), s.points, s.played,
                  s.wins, s.draws, s.losses, s.tiebreaks, s.rating, s.withdrawn, s.on_streak
           FROM tournament_standings s LEFT JOIN players p ON p.id = s.player_id
           WHERE s.tournament_id = %s ORDER BY s.place""",
        (tournament_id,),
    )
    rows = [
        StandingView(
            place=r[0],
            rank=r[1],
            player_id=r[2],
            name=r[3],
            points=r[4],
            played=r[5],
            wins=r[6],
            draws=r[7],
            losses=r[8],
            tiebreaks=list(r[9]),
            rating=r[10],
            withdrawn=r[11],
            on_streak=r[12],
        )
        for r in await cur.fetchall()
    ]
    return StandingsView(
        tournament_id=tournament_id,
        version=head.version,
        phase=head.phase,
        round=head.round,
        tiebreaks=head.tiebreaks,
        labels=[LABELS.get(n, n) for n in head.tiebreaks],  # type: ignore[call-overload]
        rows=rows,
    )


async def pairings(
    conn: AsyncConnection[Any], tournament_id: str, round_no: int | None = None
) -> PairingsView:
    head = await summary(conn, tournament_id)
    cur = await conn.execute(
        """SELECT g.game, g.round, g.board, g.player0, g.player1,
                  coalesce(a.name, g.player0), coalesce(b.name, g.player1),
                  g.match_id, g.result, g.reason, g.counted, g.annulled
           FROM tournament_games g
           LEFT JOIN players a ON a.id = g.player0 LEFT JOIN players b ON b.id = g.player1
           WHERE g.tournament_id = %s AND (%s::int IS NULL OR g.round = %s)
           ORDER BY g.round, g.game""",
        (tournament_id, round_no, round_no),
    )
    rounds: dict[int, RoundView] = {}
    for r in await cur.fetchall():
        view = rounds.setdefault(r[1], RoundView(round=r[1], games=[], byes=[]))
        view.games.append(
            GameView(
                game=r[0],
                round=r[1],
                board=r[2],
                players=(r[3], r[4]),
                names=(r[5], r[6]),
                match_id=r[7],
                result=r[8],
                reason=r[9],
                counted=r[10],
                annulled=r[11],
            )
        )
    cur = await conn.execute(
        """SELECT y.round, y.player_id, coalesce(p.name, y.player_id), y.points, y.kind
           FROM tournament_byes y LEFT JOIN players p ON p.id = y.player_id
           WHERE y.tournament_id = %s AND (%s::int IS NULL OR y.round = %s)
           ORDER BY y.round, y.points DESC, y.player_id""",
        (tournament_id, round_no, round_no),
    )
    for r in await cur.fetchall():
        view = rounds.setdefault(r[0], RoundView(round=r[0], games=[], byes=[]))
        view.byes.append(ByeView(round=r[0], player_id=r[1], name=r[2], points=r[3], kind=r[4]))
    if round_no is not None and round_no not in rounds:
        raise NotFound(f"Round {round_no} has not been paired.")
    return PairingsView(
        tournament_id=tournament_id,
        version=head.version,
        rounds=[rounds[k] for k in sorted(rounds)],
    )


async def crosstable(conn: AsyncConnection[Any], tournament_id: str) -> CrosstableView:
    head = await summary(conn, tournament_id)
    cur = await conn.execute(
        """SELECT s.place, s.rank, s.player_id, coalesce(p.name, s.player_id), s.points, s.cells
           FROM tournament_standings s LEFT JOIN players p ON p.id = s.player_id
           WHERE s.tournament_id = %s ORDER BY s.place""",
        (tournament_id,),
    )
    found = await cur.fetchall()
    place = {r[2]: r[0] for r in found}
    rows = [
        CrossRowView(
            place=r[0],
            rank=r[1],
            player_id=r[2],
            name=r[3],
            points=r[4],
            cells=[
                CrossCellView(
                    round=c["round"],
                    kind=c["kind"],
                    points=c["points"],
                    game=c.get("game"),
                    opponent=c.get("opponent"),
                    opponent_place=place.get(c.get("opponent")),
                    seat=c.get("seat"),
                    counted=c.get("counted", True),
                )
                for c in r[5]
            ],
        )
        for r in found
    ]
    return CrosstableView(
        tournament_id=tournament_id,
        version=head.version,
        format=str(type(head.format).__struct_config__.tag),
        rows=rows,
    )


async def log(conn: AsyncConnection[Any], tournament_id: str) -> TournamentLog:
    """The tournament's whole stream (nothing in it is secret) and whether its chain holds."""
    await summary(conn, tournament_id)
    cur = await conn.execute(
        "SELECT tournament_id, version, type, data::text AS data, actor, recorded_at,"
        " prev_hash, hash FROM tournament_events WHERE tournament_id = %s ORDER BY version",
        (tournament_id,),
    )
    names = [d.name for d in cur.description or ()]
    rows = [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]
    broken = store.verify_tournament_chain(rows)
    return TournamentLog(
        tournament_id=tournament_id,
        chain_ok=broken is None,
        chain_break=None if broken is None else broken.detail,
        entries=[
            TournamentLogEntry(
                version=r["version"],
                type=r["type"],
                actor=r["actor"],
                recorded_at=r["recorded_at"],
                event=msgspec.json.decode(r["data"]),
                hash=bytes(r["hash"]).hex(),
            )
            for r in rows
        ],
    )
