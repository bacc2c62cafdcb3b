"""The ratings projection: each ladder's Elo or Glicko-2 table, folded from the log.

One idea per module:

* ``job``: ``update_ladder(ladder_id)``, the RQ job (incremental or full), and
  ``move_seasons(ladder_id)``, the scheduled job that starts and ends seasons;
* ``seasons``: the season moves of a ladder and the freezing of its standings;
* ``elo_fold``, ``glicko2_fold``: the recompute's hot loops (same bits);
* ``reads``, ``recompute``, ``increment``, ``copy_out``, ``layout``, ``codes``:
  reading the log, the two paths, writing the tables.

The rating systems themselves (Elo, Glicko-2, a ladder's settings) are pure math
the API shows too: ``service.ratings``. docs/ratings.md explains them. The names
other parts import are re-exported here.
"""

from workers.ratings.elo_fold import Roster, SelfMatchError, rate_chunks, rate_results
from workers.ratings.job import apply_ladder, move_seasons, update_ladder

__all__ = [
    "Roster",
    "SelfMatchError",
    "apply_ladder",
    "move_seasons",
    "rate_chunks",
    "rate_results",
    "update_ladder",
]
