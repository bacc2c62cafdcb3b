"""What a viewer is shown of the clocks (built by ``service.engine.clock.clocks``)."""

from datetime import datetime

import msgspec

from schemas.cards import Seat
from schemas.rules import TimeControl


class SeatClock(msgspec.Struct, frozen=True, kw_only=True):
    """One seat's clock as a viewer is shown it."""

    seat: Seat
    remaining_ms: int
    """Milliseconds left at ``measured_at`` (never below 0)."""
    running: bool
    """The seat has to act now, so its clock is counting down."""
    first_move: bool
    """The seat has not moved yet: this is its no-show timer (running out aborts)."""


class Clocks(msgspec.Struct, frozen=True, kw_only=True):
    """Both clocks at one instant, and the time control they run on."""

    control: TimeControl
    measured_at: datetime
    """The server's time the remaining times were measured at."""
    seats: tuple[SeatClock, SeatClock]
