"""The state of one match, folded from its events.

``State`` is immutable and small: tuples and a few ints. The engine works on
``Table``, a mutable twin with the very same fields, so a fold or a decision
copies the state once instead of once per event (see ``thaw``/``freeze``).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, TypeAlias

import msgspec

from schemas.cards import Card, Seat
from schemas.events import EndReason, RoundRevealed, TeaPair
from schemas.rules import STANDARD, MatchTerms, Ruleset, TimeControl
from schemas.views import Phase, Tokens

NO_TOKENS: Final = Tokens()
EMPTY_PLACED: Final[tuple[Card | None, ...]] = (None,) * 12


def slot(round_no: int, seat: int, target_index: int) -> int:
    """Index into ``placed`` of a seat's card beside a target (0 number, 1 suit)."""
    return (round_no - 1) * 4 + seat * 2 + target_index


FIRST_SLOT: Final[tuple[tuple[int, int], ...]] = tuple(
    (slot(r, 0, 0), slot(r, 1, 0)) for r in range(4)
)
"""``FIRST_SLOT[round][seat]`` is ``slot(round, seat, 0)`` (the number target; the
suit target's slot follows it): the hot paths look it up instead of computing it."""


class State(msgspec.Struct, frozen=True):
    """One match, as the rules see it after some events.

    Public fields (read by the API, store, views and bots):

    * ``match_id``, ``players`` (player ids by seat), ``ladder_id``,
      ``ruleset``: copied from ``MatchCreated``;
    * ``phase``: ``new`` (not created or not dealt yet), ``playing`` (a round
      is under way), ``keeping`` (between hands, choosing cards to keep),
      ``ended`` (over, or annulled);
    * ``hand`` (1-based, 0 before the first deal), ``round`` (1..3 within the
      hand; 0 before the first deal), ``dealer`` (seat dealing this hand; it
      moves first in every round), ``first_dealer``;
    * ``to_move``: the seat whose turn it is, or None (keeping, ended, or both
      passed);
    * ``tokens``: per seat, the tokens it holds by kind;
    * ``winner`` (None: no winner yet, a draw, or annulled), ``end_reason``,
      ``ended`` (the match is over), ``annulled`` (an admin annulled it: no result);
    * ``seed``: the secret shuffle seed (hex) when the caller supplied it, or
      once ``MatchEnded`` revealed it; never shown before the end;
    * ``seed_commitment``: its public SHA-256.

    Internal fields (the table; read them through ``view``):

    * ``hands``: the cards in each seat's hand;
    * ``tea``: tea cards of the three rounds of this hand;
    * ``placed``: 12 slots, card or None, indexed by ``slot(round, seat, target)``;
    * ``passed``: per seat, passed in the current round;
    * ``kept``: the cards each seat kept at the last hand end (None: not
      chosen yet in ``keeping``, or nothing to choose);
    * ``set_aside``: the two cards nobody sees during the match;
    * ``last_reveal``: the latest reveal of this hand;
    * ``version``: number of events folded; ``disputes``: each dispute filed,
      as (dispute id, filing seat, decision: upheld True/False, None pending);
    * ``terms``: the ladder's terms copied into ``MatchCreated`` (None: the
      default terms, or a match created before terms were copied);
    * ``last_at``, ``ended_at``: when the latest event and ``MatchEnded`` were
      recorded, where the fold was given the times (``fold(..., times=)``); a
      command's events are recorded at its ``at``;
    * ``clock`` (the time control, None: untimed), ``clock_left``,
      ``clock_since``, ``moved``: the clocks as the log derives them
      (``service.engine.clock``; read them through its functions).
    """

    match_id: str = ""
    players: tuple[str, str] = ("", "")
    ladder_id: str | None = None
    ruleset: Ruleset = STANDARD
    phase: Phase = "new"
    hand: int = 0
    round: int = 0
    dealer: Seat | None = None
    first_dealer: Seat | None = None
    to_move: Seat | None = None
    tokens: tuple[Tokens, Tokens] = (NO_TOKENS, NO_TOKENS)
    winner: Seat | None = None
    end_reason: EndReason | None = None
    ended: bool = False
    annulled: bool = False
    seed: str | None = None
    seed_commitment: str | None = None
    hands: tuple[tuple[Card, ...], tuple[Card, ...]] = ((), ())
    tea: tuple[TeaPair, ...] = ()
    placed: tuple[Card | None, ...] = EMPTY_PLACED
    passed: tuple[bool, bool] = (False, False)
    kept: tuple[tuple[Card, ...] | None, tuple[Card, ...] | None] = (None, None)
    set_aside: tuple[Card, ...] = ()
    last_reveal: RoundRevealed | None = None
    version: int = 0
    disputes: tuple[tuple[str, Seat, bool | None], ...] = ()
    terms: MatchTerms | None = None
    last_at: datetime | None = None
    ended_at: datetime | None = None
    clock: TimeControl | None = None
    clock_left: tuple[int, int] = (0, 0)
    clock_since: tuple[datetime | None, datetime | None] = (None, None)
    moved: tuple[bool, bool] = (False, False)


@dataclass(slots=True)
class Table:
    """Mutable twin of ``State`` (same fields, same order): the engine's scratch pad.

    A plain slotted class, not a msgspec Struct: the engine sets a few fields
    per event, and setting a slot is about three times cheaper than setting a
    Struct field. ``placed`` and ``passed`` are lists here (one slot changes
    per card played or pass), tuples in ``State``.
    """

    match_id: str = ""
    players: tuple[str, str] = ("", "")
    ladder_id: str | None = None
    ruleset: Ruleset = STANDARD
    phase: Phase = "new"
    hand: int = 0
    round: int = 0
    dealer: Seat | None = None
    first_dealer: Seat | None = None
    to_move: Seat | None = None
    tokens: tuple[Tokens, Tokens] = (NO_TOKENS, NO_TOKENS)
    winner: Seat | None = None
    end_reason: EndReason | None = None
    ended: bool = False
    annulled: bool = False
    seed: str | None = None
    seed_commitment: str | None = None
    hands: tuple[tuple[Card, ...], tuple[Card, ...]] = ((), ())
    tea: tuple[TeaPair, ...] = ()
    placed: list[Card | None] = field(default_factory=lambda: [None] * 12)
    passed: list[bool] = field(default_factory=lambda: [False, False])
    kept: tuple[tuple[Card, ...] | None, tuple[Card, ...] | None] = (None, None)
    set_aside: tuple[Card, ...] = ()
    last_reveal: RoundRevealed | None = None
    version: int = 0
    disputes: tuple[tuple[str, Seat, bool | None], ...] = ()
    terms: MatchTerms | None = None
    last_at: datetime | None = None
    ended_at: datetime | None = None
    clock: TimeControl | None = None
    clock_left: tuple[int, int] = (0, 0)
    clock_since: tuple[datetime | None, datetime | None] = (None, None)
    moved: tuple[bool, bool] = (False, False)


assert State.__struct_fields__ == Table.__slots__, "State and Table must stay twins"

Board: TypeAlias = State | Table
"""Either form, for read-only helpers (legal moves, bots) that serve both."""


# thaw and freeze are generated from State's one field list: a copy written out
# field by field is two to three times cheaper than any generic copy (``step``
# and ``evolve`` pay it for every command or event), and generating it means a
# field added to State and Table is copied without anyone writing it twice more.
# tests/engine/test_state_copy.py checks that every field survives both.
_MUTABLE: Final = {"placed": "list({})", "passed": "list({})"}
"""Fields that are lists on the table (one slot changes per card played or pass)."""
_FROZEN: Final = {"placed": "tuple({})", "passed": "({0}[0], {0}[1])"}


def _copier(name: str, source: str, make: str, convert: dict[str, str]) -> Any:
    fields = State.__struct_fields__
    values = ", ".join(convert.get(f, "{}").format(f"{source}.{f}") for f in fields)
    lines = [f"def {name}({source}):", f"    return {make}({values})"]
    if make == "_table":
        assigns = [f"    t.{f} = " + convert.get(f, "{}").format(f"{source}.{f}") for f in fields]
        lines = [f"def {name}({source}):", "    t = _new(Table)", *assigns, "    return t"]
    namespace: dict[str, Any] = {"State": State, "Table": Table, "_new": Table.__new__}
    exec("\n".join(lines), namespace)
    return namespace[name]


_thaw: Callable[[State], Table] = _copier("thaw", "s", "_table", _MUTABLE)
_freeze: Callable[[Table], State] = _copier("freeze", "t", "State", _FROZEN)


def thaw(s: State) -> Table:
    """A mutable copy of a state (every field, in order)."""
    return _thaw(s)


def freeze(t: Table) -> State:
    """The immutable ``State`` of a table (every field, in order)."""
    return _freeze(t)


def initial_state(seed: str | None = None) -> State:
    """The state before any event. ``seed`` (64 hex) is needed only to deal."""
    return State(seed=seed)


def is_terminal(state: State) -> bool:
    """The match is over (ended, or annulled): no seat command is accepted."""
    return state.ended or state.annulled
