"""Self-play: two bots play one whole match through the engine's inner loop.

``run`` is what ``decide``/``step`` do minus copying the immutable state in
and out for every command: the same checks, the same events, the same
``apply``. Bots read the mutable table (same fields as ``State``).
"""

import random
from collections.abc import Callable

from schemas.cards import Seat
from schemas.commands import SeatCommand, StartMatch
from schemas.events import Event
from schemas.rules import Ruleset
from service.engine.decide import run
from service.engine.state import Board, State, Table, freeze
from service.engine.turns import must_keep

Player = Callable[[Board, Seat, random.Random], SeatCommand]


def play_match(
    players: tuple[Player, Player],
    ruleset: Ruleset,
    rng: random.Random,
    match_id: str = "selfplay",
) -> tuple[State, list[Event]]:
    """Play a match to its end; returns the final state and the whole log.

    Seats are asked in turn order; between hands, seat 0 keeps first. The
    seed and the first dealer come from ``rng``, so a run is reproducible.
    """
    seed = rng.getrandbits(256).to_bytes(32, "big").hex()
    start = StartMatch(
        match_id=match_id,
        players=("p0", "p1"),
        ruleset=ruleset,
        first_dealer=rng.choice((0, 1)),
        seed=seed,
    )
    t = Table()
    log = run(t, start)
    while t.phase != "ended":  # ended, or annulled
        seat = t.to_move
        if seat is None:
            seat = 0 if must_keep(t, 0) else 1
        log.extend(run(t, players[seat](t, seat, rng)))
    return freeze(t), log
