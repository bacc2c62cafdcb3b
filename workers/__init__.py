"""Workers: projections of the event log that run outside the request path.

* ``workers.projections``: the runners that follow the log (archives, ratings,
  match summaries), each from its recorded position, woken by hints;
* ``workers.ratings``: the ratings projection (Elo or Glicko-2, and seasons), the
  job ``update_ladder(ladder_id)``; ``workers.elo`` re-exports its Elo;
* ``workers.replays``: the RQ jobs that build replay archives (``service.replays``);
* ``workers.rq_worker``: an RQ worker that outlives its broker;
* ``workers.cli`` / ``workers.export``: ``matcha worker`` and ``matcha export``.

docs/ratings.md, docs/replays.md and docs/operations.md explain them.
"""
