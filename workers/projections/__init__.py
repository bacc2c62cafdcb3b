"""Projection runners: archives, ratings and match summaries follow the log.

Each runner keeps the last global log position it applied
(``projection_positions``), written in the same transaction as what it
applied, and catches up from the log at start, on every hint and every few
seconds without one. Redis only says "there is work" (``wake``): losing a
hint, or the broker, delays nothing by more than ``runner.POLL_S``.

* ``runner``: the pass and the loop (``Runner``), shared by all three;
* ``positions``: the runners' rows, locked per pass (no lock outlives its owner);
* ``log``: reading the global log after a position without skipping late commits;
* ``archives``, ``ratings``, ``summaries``, ``flags``, ``odds``: the projections
  (``flags``: fair play, docs/fairplay.md; ``odds``: the replay's odds bar);
* ``wake``: the hints over Redis, published by the API, heard by the workers.

``runners(database_url, stop)`` builds the three as ``matcha worker`` runs them;
``catch_up_all(database_url)`` applies everything pending once (``--burst``,
tests, benchmarks). docs/replays.md ("How archives keep up") explains them.
"""

from __future__ import annotations

import threading

from workers.projections.archives import ArchivesProjection
from workers.projections.flags import FlagsProjection
from workers.projections.odds import OddsProjection
from workers.projections.ratings import RatingsProjection
from workers.projections.runner import POLL_S, SWEEP_EVERY_S, Projection, Runner, Step
from workers.projections.summaries import SummariesProjection

SUMMARIES_POLL_S = 10.0
"""Summaries are written with their events: their runner only repairs, so it looks less often."""


def runners(
    database_url: str,
    stop: threading.Event,
    *,
    poll_s: float = POLL_S,
    sweeps: bool = True,
    sweep_every_s: float | None = SWEEP_EVERY_S,
) -> list[Runner]:
    """The worker's three runners (archives and ratings woken by hints, summaries
    polled). ``sweeps`` False: no backstop sweep at all, not even at start."""
    every = sweep_every_s if sweeps else None
    return [
        Runner(
            ArchivesProjection(),
            database_url,
            stop=stop,
            poll_s=poll_s,
            sweep_at_start=sweeps,
            sweep_every_s=every,
        ),
        Runner(
            RatingsProjection(database_url),
            database_url,
            stop=stop,
            poll_s=poll_s,
            sweep_at_start=sweeps,
            sweep_every_s=every,
        ),
        Runner(
            FlagsProjection(),
            database_url,
            stop=stop,
            poll_s=poll_s,
            sweep_at_start=sweeps,
            sweep_every_s=every,
        ),
        Runner(
            OddsProjection(),
            database_url,
            stop=stop,
            poll_s=poll_s,
            sweep_at_start=sweeps,
            sweep_every_s=every,
        ),
        Runner(
            SummariesProjection(),
            database_url,
            stop=stop,
            poll_s=max(poll_s, SUMMARIES_POLL_S),
            sweep_at_start=sweeps,
            sweep_every_s=None,  # summaries are written with their events: once is enough
            hinted=False,
        ),
    ]


def catch_up_all(database_url: str, *, sweep: bool = False) -> dict[str, int]:
    """Apply everything committed so far, once per projection: what each applied."""
    stop = threading.Event()
    done: dict[str, int] = {}
    for runner in runners(database_url, stop):
        try:
            done[runner.name] = runner.catch_up() + (runner.sweep() if sweep else 0)
        finally:
            runner.close()
    return done


__all__ = [
    "POLL_S",
    "ArchivesProjection",
    "FlagsProjection",
    "OddsProjection",
    "Projection",
    "RatingsProjection",
    "Runner",
    "Step",
    "SummariesProjection",
    "catch_up_all",
    "runners",
]
