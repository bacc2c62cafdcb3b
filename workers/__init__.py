"""RQ workers: projections of the event log that run outside the request path.

* ``workers.ratings``: the ratings projection (Elo or Glicko-2, and seasons), the
  job ``update_ladder(ladder_id)``; ``workers.elo`` re-exports its Elo;
* ``workers.replays``: match records and replay archives, ``build_archive(match_id)``;
* ``workers.queue``: the queues, the API's after-commit hook, the catch-up;
* ``workers.cli`` / ``workers.export``: ``matcha worker`` and ``matcha export``.

docs/ratings.md and docs/replays.md explain them.
"""
