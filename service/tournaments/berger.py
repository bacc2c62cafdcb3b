"""Round-robin schedules from the Berger tables (FIDE Handbook C.05, Annex 1).

For ``n`` players (``n`` even; an odd field adds a dummy as number ``n``,
whose opponent rests), round 1 pairs 1-n, 2-(n-1), ..., n/2-(n/2+1), the
first number of each pair taking seat 0 ("white"). Write the players other
than ``n`` in a ring: board 1's first place, then the first places of boards
2..n/2, then the second places of boards n/2..2. Each next round turns the
ring by n/2 places; player ``n`` is always on board 1, in seat 1 in odd rounds
and seat 0 in even ones. tests/tournaments/test_tournament_berger.py checks
the result against FIDE's printed tables for 4, 6, 8 and 10 players.

A double round-robin plays the same rounds again with the seats swapped.
"""

from __future__ import annotations

from functools import cache

Pairing = tuple[int, int]
"""Pairing numbers (1-based), seat 0 first."""


@cache
def berger_round(n: int, round_no: int) -> tuple[Pairing, ...]:
    """Round ``round_no`` (1 .. n-1) of the table for ``n`` players (even), board by board."""
    if n < 2 or n % 2:
        raise ValueError(f"a Berger table needs an even number of players, not {n}")
    if not 1 <= round_no <= n - 1:
        raise ValueError(f"a table for {n} players has rounds 1 to {n - 1}, not {round_no}")
    half = n // 2
    ring = [(k + (round_no - 1) * half) % (n - 1) + 1 for k in range(n - 1)]
    first: Pairing = (ring[0], n) if round_no % 2 else (n, ring[0])
    rest = [(ring[b], ring[n - 1 - b]) for b in range(1, half)]
    return (first, *rest)


def berger_table(n: int) -> tuple[tuple[Pairing, ...], ...]:
    """Every round of the table for ``n`` players (even)."""
    return tuple(berger_round(n, r) for r in range(1, n))


def table_size(players: int) -> int:
    """The table an event of ``players`` uses: the next even number."""
    return players + players % 2


def rounds_in(players: int, cycles: int) -> int:
    return (table_size(players) - 1) * cycles


def schedule_round(players: int, cycles: int, round_no: int) -> tuple[Pairing, ...]:
    """Round ``round_no`` of the whole event (second cycle: seats swapped).

    A pairing that includes number ``table_size(players)`` when ``players``
    is odd is the dummy's: its opponent rests that round.
    """
    n = table_size(players)
    per_cycle = n - 1
    cycle, within = divmod(round_no - 1, per_cycle)
    if not 0 <= cycle < cycles:
        raise ValueError(f"this event has {per_cycle * cycles} rounds, not {round_no}")
    pairs = berger_round(n, within + 1)
    return pairs if cycle == 0 else tuple((b, a) for a, b in pairs)
