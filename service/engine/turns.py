"""Turns within a round (RULES §4): what a seat may play, whether it must pass.

Who moves next is part of applying ``CardPlayed`` and ``Passed``
(``evolve.card_played``, ``evolve.passed``): the other seat unless it has
passed, the dealer first in every round. Whether a seat has a legal play at
all is asked after every move, inline, in ``decide._settle``.
"""

from schemas.cards import Seat
from schemas.commands import KeepCards, Pass, PlayCard, SeatCommand
from service.engine.state import Board, slot


def other(seat: Seat) -> Seat:
    """The opponent's seat."""
    return 1 if seat == 0 else 0


def must_keep(t: Board, seat: int) -> bool:
    """Between hands, a seat that still holds cards must choose which to keep (RULES §7)."""
    return t.phase == "keeping" and t.kept[seat] is None and bool(t.hands[seat])


def legal_moves(state: Board, seat: Seat) -> list[SeatCommand]:
    """The seat's legal commands now, for bots and UI hints.

    While playing and on turn: every (card, free target) play, then ``Pass``.
    While keeping: ``KeepCards`` of none and of all (any subset is legal;
    these two stand for the choice). ``Resign`` is always legal during a
    match but never listed. Empty when the seat has nothing to do.
    """
    if state.phase == "playing" and state.to_move == seat:
        moves: list[SeatCommand] = []
        i = slot(state.round, seat, 0)
        free = [t for t, s in (("number", i), ("suit", i + 1)) if state.placed[s] is None]
        for card in state.hands[seat]:
            if "number" in free:
                moves.append(PlayCard(seat=seat, card=card, target="number"))
            if "suit" in free:
                moves.append(PlayCard(seat=seat, card=card, target="suit"))
        moves.append(Pass(seat=seat))
        return moves
    if must_keep(state, seat):
        return [KeepCards(seat=seat, cards=()), KeepCards(seat=seat, cards=state.hands[seat])]
    return []
