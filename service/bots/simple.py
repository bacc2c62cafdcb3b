"""The two simple bots: a random legal player and a one-step heuristic player.

A bot is a function ``(state, seat, rng) -> SeatCommand`` called when the
seat has something to do (its turn, or a keep choice); ``state`` is a
``State`` or the engine's mutable ``Table`` (self-play), read only. Bots read the full
``State`` but only what the seat may know: its own hand, the tea cards and
which targets already hold a card.
"""

import random
from collections.abc import Callable
from typing import TypeAlias

import msgspec

from schemas.cards import ALL_CARDS, SEATS, Card, Seat, Target, TokenKind
from schemas.commands import KeepCards, Pass, PlayCard, SeatCommand
from schemas.rules import Ruleset
from schemas.views import Tokens
from service.engine.rank import SUIT_OF
from service.engine.state import FIRST_SLOT, Board
from service.engine.turns import must_keep
from service.engine.winning import tokens_to_qualify

Bot: TypeAlias = Callable[[Board, Seat, random.Random], SeatCommand]


class NothingToDo(Exception):
    """A bot was asked to move for a seat that has no decision to make."""


_FREE: tuple[tuple[tuple[Target, ...], tuple[Target, ...]], ...] = (
    ((), ("suit",)),
    (("number",), ("number", "suit")),
)
"""``_FREE[number free][suit free]``: the targets a seat may still play beside."""

_Plays: TypeAlias = tuple[dict[Card, PlayCard], ...]
"""Per free target, in ``_FREE``'s order: every card's play beside it."""


def _plays_beside(seat: Seat, free: tuple[Target, ...]) -> _Plays:
    return tuple(
        {card: PlayCard(seat=seat, card=card, target=t) for card in ALL_CARDS} for t in free
    )


_PLAYS: tuple[tuple[tuple[_Plays, _Plays], ...], ...] = tuple(
    tuple((_plays_beside(seat, by_suit[0]), _plays_beside(seat, by_suit[1])) for by_suit in _FREE)
    for seat in SEATS
)
"""``_PLAYS[seat][number free][suit free][k][card]``: the play of ``card`` beside
the k-th free target. Commands are immutable, so the random bot hands out these."""

_PASS: tuple[Pass, Pass] = (Pass(seat=0), Pass(seat=1))


def _free_targets(state: Board, seat: Seat) -> tuple[Target, ...]:
    i = FIRST_SLOT[state.round][seat]  # the number target; the suit target follows
    placed = state.placed
    return _FREE[placed[i] is None][placed[i + 1] is None]


def random_bot(state: Board, seat: Seat, rng: random.Random) -> SeatCommand:
    """Uniform over the legal plays and pass; a random subset when keeping.

    Picks an index into the (card x free target) plays plus pass instead of
    building every command, so self-play measures the engine, not the bot.
    """
    if state.phase == "playing" and state.to_move == seat:
        cards = state.hands[seat]
        i = FIRST_SLOT[state.round][seat]  # as _free_targets: the number target, then suit
        placed = state.placed
        plays_by_target = _PLAYS[seat][placed[i] is None][placed[i + 1] is None]
        targets = len(plays_by_target)
        plays = len(cards) * targets
        k = int(rng.random() * (plays + 1))
        if k == plays:
            return _PASS[seat]
        return plays_by_target[k % targets][cards[k // targets]]
    if must_keep(state, seat):
        return KeepCards(
            seat=seat, cards=tuple([c for c in state.hands[seat] if rng.random() < 0.5])
        )
    raise NothingToDo(f"seat {seat} has nothing to do")


def _gain(tokens: Tokens, kind: TokenKind, ruleset: Ruleset) -> int:
    """How much one more token of ``kind`` brings these tokens closer to qualifying."""
    after = msgspec.structs.replace(tokens, **{kind: tokens[kind] + 1})
    return tokens_to_qualify(tokens, ruleset) - tokens_to_qualify(after, ruleset)


def _target_value(state: Board, seat: Seat, target: Target) -> int:
    """What the token at stake beside ``target`` is worth: to me, and to deny the opponent."""
    pair = state.tea[state.round - 1]
    kind = SUIT_OF[pair.number if target == "number" else pair.suit]
    assert kind is not None
    opponent: Seat = 1 if seat == 0 else 0
    return _gain(state.tokens[seat], kind, state.ruleset) + _gain(
        state.tokens[opponent], kind, state.ruleset
    )


def heuristic_bot(state: Board, seat: Seat, rng: random.Random) -> SeatCommand:
    """Never passes while it can play, and plays beside the target whose token
    matters most (to complete its own tokens or to keep the opponent from
    theirs), with a random card; keeps every card between hands.

    Why so little about the card: every play beats a pass (a lone card wins
    whatever it is; any card beside the opponent's lone card stops it), and
    measured against the random player, preferring matching cards *lowered*
    the win rate: a non-matching card beside a matching one earns the chasen
    that "one of each" needs, while the token kind at stake decides matches.
    """
    if state.phase == "playing" and state.to_move == seat:
        free = _free_targets(state, seat)
        cards = state.hands[seat]
        if not free or not cards:
            return Pass(seat=seat)
        values = {t: _target_value(state, seat, t) for t in free}
        best = max(values.values())
        target = rng.choice([t for t in free if values[t] == best])
        return PlayCard(seat=seat, card=rng.choice(cards), target=target)
    if must_keep(state, seat):
        return KeepCards(seat=seat, cards=state.hands[seat])
    raise NothingToDo(f"seat {seat} has nothing to do")


BOTS: dict[str, Bot] = {"random": random_bot, "heuristic": heuristic_bot}
