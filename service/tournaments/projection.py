"""The tournament projections: ``tournaments`` (the lobby's row), ``tournament_standings``
(standings and crosstable lines), ``tournament_games`` and ``tournament_byes``.

Every row is a pure function of the state (``rows_of``); an append writes,
in its own transaction, only the rows that differ from the state before
(``write``), so a result in a big Swiss rewrites the few standings it moved,
not the whole table. ``rebuild`` deletes a tournament's rows and writes them
again from its stream; tests/tournaments prove both give the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from schemas.tournaments import Bye, RoundRobin, Swiss
from service.tournaments import berger, store
from service.tournaments.evolve import fold
from service.tournaments.standings import PlayerLine, lines
from service.tournaments.state import GameRecord, TournamentState


class TournamentRow(msgspec.Struct, frozen=True, kw_only=True):
    """The ``tournaments`` row."""

    id: str
    name: str
    organiser: str
    ladder_id: str
    format: str
    settings: dict[str, Any]
    phase: str
    round: int
    rounds: int | None
    round_open: bool
    players: int
    starts_at: datetime | None
    started_at: datetime | None
    ends_at: datetime | None
    ended_at: datetime | None
    created_at: datetime
    version: int


class Rows(msgspec.Struct, frozen=True, kw_only=True):
    """Every projection row of one tournament at one version."""

    summary: TournamentRow
    lines: tuple[PlayerLine, ...]
    games: Mapping[int, GameRecord]
    byes: Mapping[tuple[int, str], Bye]


def total_rounds(state: TournamentState) -> int | None:
    match state.format:
        case Swiss(rounds=rounds):
            return rounds
        case RoundRobin(cycles=cycles):
            players = len(state.seeds) or sum(1 for e in state.entrants.values() if not e.withdrawn)
            return berger.rounds_in(players, cycles) if players >= 2 else None
    return None


def summary_of(state: TournamentState, players: int) -> TournamentRow:
    assert state.format is not None and state.created_at is not None
    tag = type(state.format).__struct_config__.tag
    assert isinstance(tag, str)
    return TournamentRow(
        id=state.tournament_id,
        name=state.name,
        organiser=state.organiser,
        ladder_id=state.ladder_id,
        format=tag,
        settings={
            "format": msgspec.to_builtins(state.format),
            "ruleset": state.ruleset,
            "tiebreaks": list(state.tiebreaks),
            "auto_pair": state.auto_pair,
            "max_players": state.max_players,
        },
        phase=state.phase,
        round=state.round,
        rounds=total_rounds(state),
        round_open=state.round_open,
        players=players,
        starts_at=state.starts_at,
        started_at=state.started_at,
        ends_at=state.ends_at,
        ended_at=state.ended_at,
        created_at=state.created_at,
        version=state.version,
    )


def rows_of(state: TournamentState) -> Rows:
    standing_lines = tuple(lines(state))
    return Rows(
        summary=summary_of(state, sum(1 for line in standing_lines if not line.standing.withdrawn)),
        lines=standing_lines,
        games=dict(state.games),
        byes={(r, b.player_id): b for r, byes in state.byes.items() for b in byes},
    )


_SUMMARY_SQL = """
INSERT INTO tournaments (id, name, organiser, ladder_id, format, settings, phase, round, rounds,
    round_open, players, starts_at, started_at, ends_at, ended_at, created_at, version, head)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (id) DO UPDATE SET
    phase = EXCLUDED.phase, round = EXCLUDED.round, rounds = EXCLUDED.rounds,
    round_open = EXCLUDED.round_open, players = EXCLUDED.players,
    started_at = EXCLUDED.started_at, ends_at = EXCLUDED.ends_at,
    ended_at = EXCLUDED.ended_at, version = EXCLUDED.version, head = EXCLUDED.head,
    updated_at = now()
"""

_STANDING_SQL = """
INSERT INTO tournament_standings (tournament_id, player_id, place, rank, points, played, wins,
    draws, losses, tiebreaks, rating, withdrawn, on_streak, cells)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (tournament_id, player_id) DO UPDATE SET
    place = EXCLUDED.place, rank = EXCLUDED.rank, points = EXCLUDED.points,
    played = EXCLUDED.played, wins = EXCLUDED.wins, draws = EXCLUDED.draws,
    losses = EXCLUDED.losses, tiebreaks = EXCLUDED.tiebreaks, rating = EXCLUDED.rating,
    withdrawn = EXCLUDED.withdrawn, on_streak = EXCLUDED.on_streak, cells = EXCLUDED.cells
"""

_GAME_SQL = """
INSERT INTO tournament_games (tournament_id, game, round, board, player0, player1, match_id,
    result, reason, counted, annulled)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (tournament_id, game) DO UPDATE SET
    result = EXCLUDED.result, reason = EXCLUDED.reason, counted = EXCLUDED.counted,
    annulled = EXCLUDED.annulled
"""

_BYE_SQL = """
INSERT INTO tournament_byes (tournament_id, round, player_id, points, kind)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING
"""


async def write(conn: AsyncConnection[Any], before: Rows | None, after: Rows, head: bytes) -> None:
    """Bring the tables from ``before`` (None: no rows yet) to ``after``."""
    s = after.summary
    tid = s.id
    await conn.execute(
        _SUMMARY_SQL,
        (
            s.id,
            s.name,
            s.organiser,
            s.ladder_id,
            s.format,
            Jsonb(s.settings),
            s.phase,
            s.round,
            s.rounds,
            s.round_open,
            s.players,
            s.starts_at,
            s.started_at,
            s.ends_at,
            s.ended_at,
            s.created_at,
            s.version,
            head,
        ),
    )
    old_lines = (
        {}
        if before is None
        else {(place, line.standing.player_id): line for place, line in enumerate(before.lines)}
    )
    standing_rows = [
        (
            tid,
            line.standing.player_id,
            place + 1,
            line.standing.rank,
            line.standing.points,
            line.standing.played,
            line.standing.wins,
            line.standing.draws,
            line.standing.losses,
            list(line.standing.tiebreaks),
            line.standing.rating,
            line.standing.withdrawn,
            line.standing.on_streak,
            Jsonb(msgspec.to_builtins(line.cells)),
        )
        for place, line in enumerate(after.lines)
        if old_lines.get((place, line.standing.player_id)) != line
    ]
    gone = (
        []
        if before is None
        else sorted(
            {line.standing.player_id for line in before.lines}
            - {line.standing.player_id for line in after.lines}
        )
    )
    old_games: Mapping[int, GameRecord] = {} if before is None else before.games
    game_rows = [
        (
            tid,
            g.game,
            g.round,
            g.board,
            g.players[0],
            g.players[1],
            g.match_id,
            g.result,
            g.reason,
            g.counted,
            g.annulled,
        )
        for number, g in after.games.items()
        if old_games.get(number) != g
    ]
    old_byes: Mapping[tuple[int, str], Bye] = {} if before is None else before.byes
    bye_rows = [
        (tid, key[0], bye.player_id, bye.points, bye.kind)
        for key, bye in after.byes.items()
        if key not in old_byes
    ]
    async with conn.cursor() as cur:
        if gone:
            await cur.execute(
                "DELETE FROM tournament_standings WHERE tournament_id = %s AND player_id = ANY(%s)",
                (tid, gone),
            )
        for sql, rows in (
            (_STANDING_SQL, standing_rows),
            (_GAME_SQL, game_rows),
            (_BYE_SQL, bye_rows),
        ):
            if rows:
                await cur.executemany(sql, rows)


async def rebuild(conn: AsyncConnection[Any], tournament_id: str) -> TournamentState:
    """Delete the tournament's rows and write them again from its stream (one transaction)."""
    async with conn.transaction():
        await conn.execute("SELECT 1 FROM tournaments WHERE id = %s FOR UPDATE", (tournament_id,))
        events = await store.load(conn, tournament_id)
        for table in ("tournament_standings", "tournament_games", "tournament_byes"):
            await conn.execute(f"DELETE FROM {table} WHERE tournament_id = %s", (tournament_id,))
        await conn.execute("DELETE FROM tournaments WHERE id = %s", (tournament_id,))
        state = fold(e.event for e in events)
        if events:
            await write(conn, None, rows_of(state), events[-1].hash)
    return state
