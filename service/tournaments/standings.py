"""Standings and the crosstable: pure functions of the state (projections of the log).

The ranking: score first, then each tie-break in the organiser's order,
each applied only among players still tied (direct encounter needs the
tied group itself). Players tied on everything share a rank; among them the
table lists the higher rating first. In an arena the score is arena points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from schemas.cards import Seat
from schemas.tournaments import Arena, RoundRobin
from service.tournaments import arena, tiebreaks
from service.tournaments.records import Kind, RoundRecord, records
from service.tournaments.state import AnyTournament, Entrant


class StandingRow(msgspec.Struct, frozen=True, kw_only=True):
    rank: int
    """1-based; players tied on score and every tie-break share one."""
    player_id: str
    points: float
    """Game points (Swiss, round-robin) or arena points."""
    played: int
    """Games played over the board."""
    wins: int
    draws: int
    losses: int
    tiebreaks: tuple[float | None, ...]
    """In the tournament's order; direct encounter is None for a player not tied."""
    rating: float
    withdrawn: bool
    on_streak: bool = False
    """Arena: the next game is worth double."""


class CrossCell(msgspec.Struct, frozen=True, kw_only=True):
    """One round (or arena game) of a player's line in the crosstable."""

    round: int
    kind: Kind
    points: float
    game: int | None = None
    opponent: str | None = None
    seat: Seat | None = None
    counted: bool = True


class PlayerLine(msgspec.Struct, frozen=True, kw_only=True):
    """A player's standing and their crosstable line: one row of the projection."""

    standing: StandingRow
    cells: tuple[CrossCell, ...]


def participants(state: AnyTournament, recs: Mapping[str, Sequence[RoundRecord]]) -> list[Entrant]:
    """Who the standings list: everyone but those who left before playing anything."""
    seeded = set(state.seeds)
    return [
        e
        for e in state.entrants.values()
        if not e.withdrawn
        or e.player_id in seeded
        or any(r.kind != "absent" for r in recs[e.player_id])
    ]


def scores(state: AnyTournament, recs: Mapping[str, Sequence[RoundRecord]]) -> dict[str, float]:
    """Each entrant's score over finished games (arena points in an arena)."""
    if isinstance(state.format, Arena):
        return {p: float(arena.points(rows)[0]) for p, rows in recs.items()}
    return {p: float(sum(r.points for r in tiebreaks.finished(rows))) for p, rows in recs.items()}


def context(state: AnyTournament, recs: Mapping[str, Sequence[RoundRecord]]) -> tiebreaks.Context:
    """Everyone's scores as the tie-breaks read them."""
    score = scores(state, recs)
    if isinstance(state.format, Arena):
        opponent_scores: Mapping[str, float] = score
    else:
        opponent_scores = {p: tiebreaks.adjusted_score(rows) for p, rows in recs.items()}
    return tiebreaks.Context(
        scores=score,
        opponent_scores=opponent_scores,
        ratings={p: e.rating for p, e in state.entrants.items()},
        max_score=float(max((len(tiebreaks.finished(rows)) for rows in recs.values()), default=0)),
        round_robin=isinstance(state.format, RoundRobin),
    )


def lines(state: AnyTournament) -> list[PlayerLine]:
    """The standings, best first, each with its crosstable line."""
    recs = records(state)
    people = participants(state, recs)
    ctx = context(state, recs)
    score = ctx.scores
    names = state.tiebreaks
    values: dict[str, list[float | None]] = {e.player_id: [None] * len(names) for e in people}
    for k, name in enumerate(names):
        if name == "direct_encounter":
            continue
        compute = tiebreaks.SCALARS[name]
        for e in people:
            values[e.player_id][k] = float(compute(recs[e.player_id], score[e.player_id], ctx))
    by_id = {e.player_id: e for e in people}

    def tidy(group: list[str]) -> list[str]:
        return sorted(group, key=lambda p: (-by_id[p].rating, by_id[p].number))

    # Ties broken step by step: a group splits only where the next key differs.
    groups: list[list[str]] = []
    for e in sorted(people, key=lambda e: -score[e.player_id]):
        if groups and score[groups[-1][0]] == score[e.player_id]:
            groups[-1].append(e.player_id)
        else:
            groups.append([e.player_id])
    for k, name in enumerate(names):
        split: list[list[str]] = []
        for group in groups:
            if len(group) == 1:
                split.append(group)
            elif name == "direct_encounter":
                ordered, de = tiebreaks.direct_encounter(tidy(group), recs)
                for p in group:
                    values[p][k] = float(de[p])
                split.extend(ordered)
            else:
                for level in sorted({values[p][k] or 0.0 for p in group}, reverse=True):
                    split.append([p for p in group if (values[p][k] or 0.0) == level])
        groups = split
    out: list[PlayerLine] = []
    for group in groups:
        rank = len(out) + 1
        for player_id in tidy(group):
            out.append(_line(state, by_id[player_id], rank, score, values, recs))
    return out


def _line(
    state: AnyTournament,
    e: Entrant,
    rank: int,
    score: Mapping[str, float],
    values: Mapping[str, list[float | None]],
    recs: Mapping[str, Sequence[RoundRecord]],
) -> PlayerLine:
    rows = recs[e.player_id]
    done = [r for r in tiebreaks.finished(rows) if r.played]
    standing = StandingRow(
        rank=rank,
        player_id=e.player_id,
        points=score[e.player_id],
        played=len(done),
        wins=sum(1 for r in done if r.kind == "win"),
        draws=sum(1 for r in done if r.kind == "draw"),
        losses=sum(1 for r in done if r.kind == "loss"),
        tiebreaks=tuple(values[e.player_id]),
        rating=e.rating,
        withdrawn=e.withdrawn,
        on_streak=isinstance(state.format, Arena) and arena.points(rows)[1],
    )
    cells = tuple(
        CrossCell(
            round=r.round,
            kind=r.kind,
            points=r.points,
            game=r.game,
            opponent=r.opponent,
            seat=r.seat,
            counted=r.counted,
        )
        for r in rows
    )
    return PlayerLine(standing=standing, cells=cells)


def standings(state: AnyTournament) -> list[StandingRow]:
    return [line.standing for line in lines(state)]
