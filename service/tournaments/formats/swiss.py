"""Swiss: paired by the FIDE Dutch system (``service.tournaments.dutch``).

Everything the pairing reads comes from the players' records (the log):
pairing numbers from the seeding (rating, then joining order, late entries
slotted in by rating: C.04.2 B), scores, seats of the games played, floats
(A.4: a pair of different scores floats its higher player down and its lower
up; a round scored without playing, for more than a loss, floats the player
down), whether a player already had a bye or a forfeit win, topscorers in the
final round, and Baku acceleration's virtual points when the organiser asked
for them. Players who asked in advance for a half-point bye this round sit it
out with half a point.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from schemas.tournaments import Bye, Format, RoundPaired, Swiss, TiebreakName
from service.errors import RuleError
from service.tournaments.dutch.card import Card, Float
from service.tournaments.dutch.engine import pair_round as dutch_pair
from service.tournaments.formats.base import Emit, Forced, new_game
from service.tournaments.records import RoundRecord, records
from service.tournaments.state import AnyTournament, TournamentSheet, active

MAX_SWISS_ROUNDS: Final = 50


def seeding_order(t: AnyTournament) -> list[str]:
    """Every entrant by rating, then joining order: the pairing numbers."""
    return [e.player_id for e in sorted(t.entrants.values(), key=lambda e: (-e.rating, e.number))]


def virtual_points(fmt: Swiss, tpn: int, field: int, round_no: int) -> int:
    """Baku acceleration (C.04.5.1), in half points: the first half of the field
    (rounded up to even) has 1 point in the first half of the accelerated
    rounds and ½ in the rest; the accelerated rounds are the first half of all."""
    if not fmt.accelerated:
        return 0
    top = field // 2 + (field // 2) % 2
    accelerated = (fmt.rounds + 1) // 2
    if tpn > top or round_no > accelerated:
        return 0
    return 2 if round_no <= (accelerated + 1) // 2 else 1


def _float(rows: list[RoundRecord], k: int, before: dict[str, list[int]], me: str) -> Float:
    r = rows[k]
    if r.played and r.opponent is not None:
        mine, theirs = before[me][k], before[r.opponent][k]
        return "down" if mine > theirs else "up" if mine < theirs else None
    return "down" if r.points > 0 and r.kind not in ("half",) else None


def cards(t: AnyTournament, round_no: int) -> list[Card]:
    """The pairing cards of the players round ``round_no`` pairs."""
    fmt = t.format
    assert isinstance(fmt, Swiss)
    recs = records(t)
    order = seeding_order(t)
    tpn = {p: k for k, p in enumerate(order, start=1)}
    field = len(order)
    # Pairing scores (with virtual points) before each round, for floats.
    before: dict[str, list[int]] = {}
    for p, rows in recs.items():
        score, out = 0, []
        for k, r in enumerate(rows, start=1):
            out.append(score + virtual_points(fmt, tpn[p], field, k))
            score += round(2 * r.points) if r.kind != "playing" else 0
        before[p] = out
    asked = set(t.requested_byes.get(round_no, ()))
    out_cards = []
    for e in active(t):
        if e.first_round > round_no or e.player_id in asked:
            continue
        rows = [r for r in recs[e.player_id] if r.kind != "playing"]
        points = round(2 * sum(r.points for r in rows))
        floats = [_float(rows, k, before, e.player_id) for k in range(len(rows))]
        out_cards.append(
            Card(
                player_id=e.player_id,
                tpn=tpn[e.player_id],
                score=points + virtual_points(fmt, tpn[e.player_id], field, round_no),
                points=points,
                seats=tuple(r.seat for r in rows if r.played and r.seat is not None),
                floats=(
                    floats[-1] if floats else None,
                    floats[-2] if len(floats) > 1 else None,
                ),
                opponents=frozenset(r.opponent for r in rows if r.played and r.opponent),
                had_bye=any(r.kind in ("bye", "forfeit_win") for r in rows),
                topscorer=round_no == fmt.rounds and points > round_no - 1,
            )
        )
    return out_cards


class SwissRules:
    default_tiebreaks: tuple[TiebreakName, ...] = ("buchholz_cut1", "buchholz", "sonneborn_berger")
    fixed_pairings: bool = False
    rounds_it_pairs: bool = True

    def half_point_byes(self, t: TournamentSheet) -> int:
        assert isinstance(t.format, Swiss)
        return t.format.half_point_byes

    def validate(self, fmt: Format) -> None:
        assert isinstance(fmt, Swiss)
        if not 1 <= fmt.rounds <= MAX_SWISS_ROUNDS:
            raise RuleError(
                "bad_rounds", f"A Swiss has 1 to {MAX_SWISS_ROUNDS} rounds, not {fmt.rounds}."
            )
        if fmt.bye_points not in (0.0, 0.5, 1.0):
            raise RuleError(
                "bad_bye_points", f"A bye is worth 0, 0.5 or 1 point, not {fmt.bye_points}."
            )
        if fmt.late_entry_until is not None and fmt.late_entry_until > fmt.rounds:
            raise RuleError(
                "bad_late_entry",
                f"Late entries can be paired up to round {fmt.rounds} at most, "
                f"not {fmt.late_entry_until}.",
            )
        if fmt.half_point_byes > fmt.rounds:
            raise RuleError("bad_half_point_byes", "More half-point byes than rounds.")

    def total_rounds(self, t: AnyTournament) -> int:
        assert isinstance(t.format, Swiss)
        return t.format.rounds

    def check_entry(self, t: TournamentSheet, at: datetime) -> None:
        assert isinstance(t.format, Swiss)
        # A late entry is paired from the next round: it must be one the
        # organiser still takes entries for, and never the final round once
        # that is paired (the round being played is the last one counted).
        last = t.format.late_entry_until or t.format.rounds
        if t.round + 1 > last:
            raise RuleError(
                "entries_closed",
                f"Late entries are paired up to round {last}; round {t.round} is already paired.",
            )

    def start(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        if t.auto_pair:
            self.pair_round(t, at, emit, ((), ()))

    def pair_round(self, t: TournamentSheet, at: datetime, emit: Emit, forced: Forced) -> None:
        assert isinstance(t.format, Swiss)
        round_no = t.round + 1
        forced_pairs, forced_byes = forced
        players = cards(t, round_no)
        eligible = {c.player_id for c in players}
        taken: set[str] = set()
        for player_id in [p for pair in forced_pairs for p in pair] + list(forced_byes):
            if player_id not in eligible:
                raise RuleError(
                    "not_pairable", f"Player {player_id} cannot be paired in round {round_no}."
                )
            if player_id in taken:
                raise RuleError("paired_twice", f"Player {player_id} is paired more than once.")
            taken.add(player_id)
        for a, b in forced_pairs:
            if tuple(sorted((a, b))) in t.forbidden:
                raise RuleError("pairing_forbidden", f"The pairing {a} - {b} is forbidden.")
        rest = [c for c in players if c.player_id not in taken]
        pairing = dutch_pair(
            rest,
            rounds_played=round_no - 1,
            final_round=round_no == t.format.rounds,
            forbidden=t.forbidden,
        )
        boards = [*forced_pairs, *pairing.boards]
        number = len(t.games)
        games = tuple(
            new_game(t, number + board, round_no, board, pair)
            for board, pair in enumerate(boards, start=1)
        )
        byes = [
            Bye(player_id=p, points=t.format.bye_points, kind="bye")
            for p in [*forced_byes, *([pairing.bye] if pairing.bye else [])]
        ]
        byes += [Bye(player_id=p, points=0.0, kind="unpaired") for p in pairing.unpaired]
        byes += [
            Bye(player_id=p, points=0.5, kind="half")
            for p in t.requested_byes.get(round_no, ())
            if not t.entrants[p].withdrawn
        ]
        emit(
            RoundPaired(
                at=at,
                round=round_no,
                games=games,
                byes=tuple(byes),
                forced=bool(forced_pairs or forced_byes),
            )
        )

    def after_game(self, t: TournamentSheet, at: datetime, emit: Emit) -> None:
        return None

    def is_over(self, t: TournamentSheet) -> bool:
        assert isinstance(t.format, Swiss)
        return t.round >= t.format.rounds or len(active(t)) < 2

    def ends_at(self, t: TournamentSheet, at: datetime) -> datetime | None:
        return None


RULES = SwissRules()
