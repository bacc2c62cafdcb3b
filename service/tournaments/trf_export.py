"""A tournament as TRF-2026 (``trf.write``), and an organiser's TRF as the entries of a new one.

Export: every entrant in pairing-number order (rating, then joining order),
named as the service knows them; per round the opponent, the colour (seat 0
White) and the result in TRF's codes; requested byes as ``240`` records, the
organiser's forbidden pairs as ``260``, Baku acceleration as ``250``. Pure:
the caller passes the names.
"""

from __future__ import annotations

from collections.abc import Mapping

from schemas.tournaments import Swiss
from service.tournaments.formats import rules_for
from service.tournaments.formats.swiss import seeding_order, virtual_points
from service.tournaments.records import RoundRecord, records
from service.tournaments.standings import standings
from service.tournaments.state import AnyTournament
from service.tournaments.tiebreaks import TRF_CODES
from service.tournaments.trf import TrfPlayer, TrfRound, TrfTournament

_CODES = {
    "win": "1",
    "draw": "=",
    "loss": "0",
    "forfeit_win": "+",
    "forfeit_loss": "-",
    "double_forfeit": "-",
    "bye": "U",
    "half": "H",
    "late": "Z",
    "absent": "Z",
    "unpaired": "Z",
    "rest": "Z",
    "annulled": "Z",
}


def _round(r: RoundRecord, number: Mapping[str, int]) -> TrfRound:
    if r.kind == "playing":
        return TrfRound(
            opponent=number.get(r.opponent or "", 0), colour="wb"[r.seat or 0], result=" "
        )
    code = _CODES[r.kind]
    if r.opponent and r.kind in (
        "win",
        "draw",
        "loss",
        "forfeit_win",
        "forfeit_loss",
        "double_forfeit",
    ):
        return TrfRound(opponent=number[r.opponent], colour="wb"[r.seat or 0], result=code)
    return TrfRound(opponent=0, colour="-", result=code)


def export(state: AnyTournament, names: Mapping[str, str]) -> TrfTournament:
    order = seeding_order(state)
    number = {p: k for k, p in enumerate(order, start=1)}
    recs = records(state)
    table = {row.player_id: row for row in standings(state)}
    fmt = state.format
    bye_points = fmt.bye_points if isinstance(fmt, Swiss) else 1.0
    players = []
    for p in order:
        row = table.get(p)
        players.append(
            TrfPlayer(
                number=number[p],
                name=names.get(p, p),
                rating=round(state.entrants[p].rating),
                points=sum(r.points for r in recs[p] if r.kind != "playing"),
                rank=row.rank if row else len(order),
                rounds=tuple(_round(r, number) for r in recs[p]),
            )
        )
    accelerated: list[tuple[float, int, int, int, int]] = []
    if isinstance(fmt, Swiss) and fmt.accelerated:
        field = len(order)
        top = field // 2 + (field // 2) % 2
        for r in range(1, fmt.rounds + 1):
            v = virtual_points(fmt, 1, field, r)
            if v:
                accelerated.append((v / 2, r, r, 1, top))
    kind = {"swiss": "Swiss Dutch", "round_robin": "Round robin", "arena": "Arena"}
    tag = str(type(fmt).__struct_config__.tag) if fmt is not None else "swiss"
    rounds = rules_for(fmt).total_rounds(state) if fmt is not None else 0
    return TrfTournament(
        name=state.name,
        rounds=rounds or state.round,
        players=tuple(players),
        start=state.started_at.date() if state.started_at else None,
        end=state.ended_at.date() if state.ended_at else None,
        arbiter=names.get(state.organiser, state.organiser),
        kind=kind.get(tag, tag),
        bye_points=bye_points,
        tiebreaks=tuple(TRF_CODES[t] for t in state.tiebreaks),
        accelerated=tuple(accelerated),
        forbidden=tuple(sorted((number[a], number[b]) for a, b in state.forbidden)),
        requested_byes=tuple(
            ("H", r, number[p]) for r, who in sorted(state.requested_byes.items()) for p in who
        ),
    )
