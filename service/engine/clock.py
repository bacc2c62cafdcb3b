"""The clocks: each seat's remaining time, derived from the log (RULES §6).

No clock state is ever stored. A seat's clock is a pure function of the
match's events, the instants they were recorded at (every event of one
command is recorded at the command's ``at``) and the match's time control
(``MatchTerms.clock``); the fold keeps it in three fields of the state:

* ``clock_left``: per seat, microseconds left as of ``clock_since`` (or, for a
  stopped clock, as of when it stopped);
* ``clock_since``: per seat, the instant its clock started running (None: stopped);
* ``moved``: per seat, it has made a move of its own (a play, a pass of its
  own, a keep): until then its clock is the no-show timer.

The rules, applied at every event (``charge`` before it, ``settle`` after):

* a seat's clock runs while the seat has to act: the seat to move in a
  round, and between hands each seat that still has to choose what to keep
  (both at once, each on its own clock);
* real-time (``RealTime``): a seat starts with ``base_s``, gains
  ``increment_s`` after each of its moves (not after its first, which starts
  its clock);
* correspondence (``Correspondence``): a seat has ``per_move_s`` for each move;
* until its first move a seat has ``no_show_s`` in all (its main clock does
  not run): if that runs out the match is aborted, unrated.

``remaining_ms(state, seat, now)`` is what views, frames, replays and the
audit show; ``expired(state, seat, at)`` is what ``decide`` refuses a late
command with. Pure: no I/O, no clock of its own; ``now`` is always given.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from schemas.cards import Seat
from schemas.clocks import Clocks, SeatClock
from schemas.events import CardPlayed, CardsKept, Event, Passed
from schemas.rules import Correspondence, RealTime, TimeControl
from service.engine.state import Board, Table
from service.engine.turns import must_keep

_US = timedelta(microseconds=1)


def start_values(control: TimeControl) -> tuple[int, int]:
    """Each seat's clock at creation: its no-show timer, in microseconds."""
    us = control.no_show_s * 1_000_000
    return (us, us)


def _move_budget_us(control: TimeControl) -> int:
    if isinstance(control, RealTime):
        return control.base_s * 1_000_000
    return control.per_move_s * 1_000_000


def acting(t: Board) -> tuple[bool, bool]:
    """Which seats have to act now (whose clocks run)."""
    if t.phase == "playing":
        to_move = t.to_move
        return (to_move == 0, to_move == 1)
    if t.phase == "keeping":
        return (must_keep(t, 0), must_keep(t, 1))
    return (False, False)


def mover(event: Event) -> Seat | None:
    """The seat whose own move ``event`` records (None: a consequence, not a move)."""
    if isinstance(event, CardPlayed | CardsKept):
        return event.seat
    if isinstance(event, Passed) and not event.automatic:
        return event.seat
    return None


def charge(t: Table, at: datetime) -> None:
    """Charge each running clock with the time up to ``at`` (before an event at ``at``)."""
    since = t.clock_since
    if since[0] is None and since[1] is None:
        return
    left = list(t.clock_left)
    for seat in (0, 1):
        started = since[seat]
        if started is not None:
            left[seat] -= (at - started) // _US
    t.clock_left = (left[0], left[1])
    t.clock_since = (None if since[0] is None else at, None if since[1] is None else at)


def settle(t: Table, events: Iterable[Event], at: datetime) -> None:
    """After ``events`` (all recorded at ``at``, already applied): credit each move,
    then start the clocks of the seats that now have to act and stop the others."""
    control = t.clock
    if control is None:
        return
    left = list(t.clock_left)
    moved = list(t.moved)
    for event in events:
        who = mover(event)
        if who is None:
            continue
        if not moved[who]:
            moved[who] = True
            left[who] = _move_budget_us(control)
        elif isinstance(control, RealTime):
            left[who] += control.increment_s * 1_000_000
        else:
            left[who] = control.per_move_s * 1_000_000
    now = acting(t)
    since = list(t.clock_since)
    for seat in (0, 1):
        if now[seat]:
            if since[seat] is None:
                since[seat] = at
        else:
            since[seat] = None
        # Correspondence: a seat that has moved waits with a whole move's time
        # (so a clock that stops and starts within one command is unchanged).
        if isinstance(control, Correspondence) and moved[seat] and since[seat] is None:
            left[seat] = control.per_move_s * 1_000_000
    t.clock_left = (left[0], left[1])
    t.clock_since = (since[0], since[1])
    t.moved = (moved[0], moved[1])


def stop(t: Table) -> None:
    """Stop both clocks (the match ended or was annulled)."""
    t.clock_since = (None, None)


# -- reading the clocks ------------------------------------------------------------


def remaining_us(t: Board, seat: Seat, now: datetime) -> int:
    """Microseconds ``seat`` has left at ``now`` (negative: ran out that long ago)."""
    started = t.clock_since[seat]
    left = t.clock_left[seat]
    if started is None:
        return left
    return left - (now - started) // _US


def remaining_ms(t: Board, seat: Seat, now: datetime) -> int:
    """Milliseconds ``seat`` has left at ``now`` (0 once run out)."""
    return max(0, remaining_us(t, seat, now) // 1000)


def deadline(t: Board, seat: Seat) -> datetime | None:
    """When ``seat``'s running clock runs out (None: untimed, or not running)."""
    started = t.clock_since[seat]
    if t.clock is None or started is None:
        return None
    return started + timedelta(microseconds=t.clock_left[seat])


def expired(t: Board, seat: Seat, at: datetime) -> bool:
    """``seat``'s clock was running and had run out at ``at`` (at its deadline or later)."""
    due = deadline(t, seat)
    return due is not None and at >= due


def next_deadline(t: Board) -> tuple[Seat, datetime] | None:
    """The seat whose clock runs out first, and when (None: no clock running)."""
    found: tuple[Seat, datetime] | None = None
    seat: Seat
    for seat in (0, 1):
        due = deadline(t, seat)
        if due is not None and (found is None or due < found[1]):
            found = (seat, due)
    return found


def clocks(t: Board, now: datetime) -> Clocks | None:
    """Both clocks at ``now``, as every view, frame, replay and audit shows them."""
    control = t.clock
    if control is None:
        return None
    seats = tuple(
        SeatClock(
            seat=seat,
            remaining_ms=remaining_ms(t, seat, now),
            running=t.clock_since[seat] is not None,
            first_move=not t.moved[seat],
        )
        for seat in (0, 1)
    )
    return Clocks(control=control, measured_at=now, seats=(seats[0], seats[1]))


__all__ = [
    "Clocks",
    "SeatClock",
    "acting",
    "charge",
    "clocks",
    "deadline",
    "expired",
    "mover",
    "next_deadline",
    "remaining_ms",
    "remaining_us",
    "settle",
    "start_values",
]
