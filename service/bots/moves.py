"""A seat's choices as small integers, and what the other seat sees of each.

The search keys its trees by these codes (dictionary keys hashed millions of
times a second: an ``int`` is the cheapest key there is), and hands the
engine the prebuilt command of each code (commands are immutable).

Codes of a seat's own moves:

* ``PlayCard``: ``2 * card index + target index`` (0..35, ``ALL_CARDS`` and
  ``TARGETS`` order);
* ``Pass``: ``PASS`` (36);
* between hands, one ``KeepCards`` per option of ``keep_options`` (37..40).

What the other seat observes of a move (RULES §8): a card played face down
beside a target (``SEEN_PLAY + target index``, the card hidden), a pass, or
that a choice of kept cards was made (``SEEN_KEEP``: the cards and even their
count stay secret until the deal).
"""

from __future__ import annotations

from typing import Final

from schemas.cards import ALL_CARDS, SEATS, TARGETS, Card, Seat
from schemas.commands import KeepCards, Pass, PlayCard, SeatCommand
from service.engine.state import FIRST_SLOT, Board

PASS: Final = 36
KEEP: Final = 37
"""``KEEP + i``: the i-th of ``keep_options``."""
SEEN_PLAY: Final = 40
SEEN_KEEP: Final = 50

CARD_INDEX: Final[dict[Card, int]] = {card: i for i, card in enumerate(ALL_CARDS)}

_PLAY_COMMANDS: Final[tuple[tuple[PlayCard, ...], ...]] = tuple(
    tuple(PlayCard(seat=seat, card=card, target=target) for card in ALL_CARDS for target in TARGETS)
    for seat in SEATS
)
_PASS_COMMANDS: Final = (Pass(seat=0), Pass(seat=1))


def observed(code: int) -> int:
    """What the other seat sees of the move ``code``."""
    if code < PASS:
        return SEEN_PLAY + (code & 1)
    if code == PASS:
        return PASS
    return SEEN_KEEP


def keep_options(hand: tuple[Card, ...]) -> list[tuple[Card, ...]]:
    """The keep choices the search weighs: all, none, only the suited cards, only
    the zero cards (without repeats). Any subset is legal; these are the ones
    that differ in kind (a zero card never matches but still wins alone or
    blocks a lone card, RULES §5), and 2**5 choices would starve the search."""
    suited = tuple(c for c in hand if c[0] != "Z")
    zeros = tuple(c for c in hand if c[0] == "Z")
    options: list[tuple[Card, ...]] = []
    for option in (hand, (), suited, zeros):
        if option not in options:
            options.append(option)
    return options


def legal(t: Board, seat: Seat) -> tuple[list[int], list[SeatCommand]]:
    """The seat's choices now, as codes and as commands (empty: nothing to do)."""
    if t.phase == "playing" and t.to_move == seat:
        i = FIRST_SLOT[t.round][seat]
        n_free = t.placed[i] is None
        s_free = t.placed[i + 1] is None
        plays = _PLAY_COMMANDS[seat]
        codes: list[int] = []
        for card in t.hands[seat]:
            base = 2 * CARD_INDEX[card]
            if n_free:
                codes.append(base)
            if s_free:
                codes.append(base + 1)
        commands: list[SeatCommand] = [plays[c] for c in codes]
        codes.append(PASS)
        commands.append(_PASS_COMMANDS[seat])
        return codes, commands
    if t.phase == "keeping" and t.kept[seat] is None and t.hands[seat]:
        options = keep_options(t.hands[seat])
        return (
            [KEEP + i for i in range(len(options))],
            [KeepCards(seat=seat, cards=o) for o in options],
        )
    return [], []


def to_move(t: Board) -> Seat | None:
    """The seat that has something to do now (between hands: seat 0 first, as
    self-play and the engine's keep order go), or None when the match is over."""
    if t.phase == "playing":
        return t.to_move
    if t.phase == "keeping":
        if t.kept[0] is None and t.hands[0]:
            return 0
        if t.kept[1] is None and t.hands[1]:
            return 1
    return None
