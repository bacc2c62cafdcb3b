"""Redis as the service's broker: what one process tells the others after a
commit, and the jobs an operator queues. Only ever a hint or a request for
work: the events table is the truth, and every reader catches up from it.

* ``pubsub``: one interface over one Redis or a Redis Cluster (``redis+cluster://``
  URLs): publish a hint, subscribe (sharded pub/sub on a cluster), reconnect;
* ``channels``: every Redis name (live channels, presence, the workers' hints);
* ``hints``: the messages of live play between processes (public only);
* ``publish``: ``Publisher``, the after-commit hook that sends them;
* ``wake``: the after-commit hooks that wake the projection runners and the
  clock sweepers;
* ``jobs``: the RQ queues (``enqueue_ladder_update``, ``enqueue_archive``,
  ``fetch_job``): jobs named by their dotted path, so the API never imports
  the workers.

Producers (the API, bot play, the clock sweepers) and consumers (the live hub,
the workers) both import this package; none of them imports another.
"""
