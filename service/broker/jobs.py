"""The workers' RQ queues: what the API enqueues and the workers take.

End-of-match work is not queued: the projection runners of every worker
follow the log (``workers.projections``), and the API only publishes a hint
that something ended (``service.broker.wake``), so a lost hint or a lost
queue delays nothing by more than the runners' poll interval.

A job is named by its dotted path (``"workers.ratings.update_ladder"``), so
the API enqueues it without importing the workers. RQ carries the work an
operator asks for, each queue named with ``settings.redis.prefix`` so tests
and tenants never share one: ``<prefix>-ratings``
(``workers.ratings.update_ladder``: an admin's full recompute with its
progress, an annulled match's ladder) and
``<prefix>-replays`` (``workers.replays.build_archive``: one archive now).
Ratings work is coalesced per ladder: while an update of a ladder waits in
the queue, asking again returns that job instead of queueing a second one
(``enqueue_ladder_update``). A worker takes from its queues in turn
(round robin), so a long recompute never starves an archive job.
"""

from __future__ import annotations

import threading

from redis import Redis
from rq import Queue, Retry
from rq.job import Job, JobStatus

from service.broker import rq_cluster
from service.settings import load_settings

RATINGS = "ratings"
REPLAYS = "replays"

RATINGS_TIMEOUT_S = 3600
"""A full recompute of a million-match ladder takes seconds; an hour is a hung job."""
REPLAYS_TIMEOUT_S = 300
RESULT_TTL_S = 7 * 24 * 3600
"""How long a finished job (and its progress) can be read at GET /api/jobs/{id}."""
RETRY = Retry(max=3, interval=[1, 5, 30])
"""A job that fails, or whose worker died under it, runs again: jobs are idempotent."""

_PENDING = frozenset({JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED})

_clients: dict[str, Redis] = {}
_clients_lock = threading.Lock()


def redis_client(url: str | None = None) -> Redis:
    """A (cached) synchronous Redis client; RQ needs the blocking API. On a Redis
    Cluster (``redis+cluster://``) the master of RQ's one slot, found again after a
    failover (``service.broker.rq_cluster``).

    Short timeouts: an enqueue from the API must give up quickly when Redis is down.
    """
    url = url or load_settings().redis.url
    if not url:
        raise RuntimeError("REDIS_URL is not set: the workers' queues live in Redis")
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            # one Redis, or the master of RQ's slot on a cluster (``rq_cluster``)
            client = rq_cluster.connection(url, socket_connect_timeout=1.0, socket_timeout=5.0)
            _clients[url] = client
        return client


def queue_name(kind: str, prefix: str | None = None) -> str:
    prefix = load_settings().redis.prefix if prefix is None else prefix
    return f"{prefix}-{kind}"


def queue(kind: str, *, redis: Redis | None = None, prefix: str | None = None) -> Queue:
    return Queue(queue_name(kind, prefix), connection=redis or redis_client())


def queues(*, redis: Redis | None = None, prefix: str | None = None) -> list[Queue]:
    """The queues a worker listens on (taken from in turn: ``workers.rq_worker``)."""
    return [queue(kind, redis=redis, prefix=prefix) for kind in (RATINGS, REPLAYS)]


def pending_update_key(ladder_id: str, full: bool, prefix: str | None = None) -> str:
    """Names the ladder's last queued update of this kind (a pointer, never a lock)."""
    kind = "recompute" if full else "update"
    name = f"{queue_name(RATINGS, prefix)}:{kind}:{ladder_id}"
    # Beside RQ's keys, in their hash slot when they have one (a Redis Cluster:
    # the enqueue's connection serves that slot alone).
    tag = rq_cluster.hash_tag(rq_cluster.rq_key_prefix())
    return name if tag is None else f"{{{tag}}}:{name}"


def enqueue_ladder_update(
    ladder_id: str, *, full: bool = False, redis: Redis | None = None, prefix: str | None = None
) -> Job:
    """Queue ``update_ladder(ladder_id)`` (``full``: rebuild the ladder from scratch),
    unless an update of the same kind of this ladder is still waiting: that job is
    returned instead. One pending update per ladder: it will read the log when it
    runs, so it covers every result committed before then. (Two callers racing may
    both queue one; the second then finds nothing new, as every job is idempotent.)
    """
    redis = redis or redis_client()
    key = pending_update_key(ladder_id, full, prefix)
    waiting = redis.get(key)
    if waiting is not None:
        job_id = waiting.decode() if isinstance(waiting, bytes) else str(waiting)
        job = fetch_job(job_id, redis=redis, prefix=prefix)
        if job is not None and job.get_status(refresh=False) in _PENDING:
            return job
    job = queue(RATINGS, redis=redis, prefix=prefix).enqueue(
        "workers.ratings.update_ladder",
        ladder_id,
        full=full,
        job_timeout=RATINGS_TIMEOUT_S,
        result_ttl=RESULT_TTL_S,
        retry=RETRY,
        description=f"{'recompute' if full else 'update'} ratings of ladder {ladder_id}",
        meta={"kind": "ratings", "ladder_id": ladder_id, "full": full},
    )
    redis.set(key, job.id, ex=RESULT_TTL_S)
    return job


def enqueue_archive(match_id: str, *, redis: Redis | None = None, prefix: str | None = None) -> Job:
    """Queue ``build_archive(match_id)``: one replay archive built now."""
    return queue(REPLAYS, redis=redis, prefix=prefix).enqueue(
        "workers.replays.build_archive",
        match_id,
        job_timeout=REPLAYS_TIMEOUT_S,
        result_ttl=3600,
        retry=RETRY,
        description=f"replay archive of match {match_id}",
        meta={"kind": "replay", "match_id": match_id},
    )


def fetch_job(job_id: str, *, redis: Redis | None = None, prefix: str | None = None) -> Job | None:
    """One of *our* jobs by id, or None (a job of another prefix is not ours to show)."""
    names = {queue_name(kind, prefix) for kind in (RATINGS, REPLAYS)}
    try:
        job = Job.fetch(job_id, connection=redis or redis_client())
    except Exception:  # NoSuchJobError, or an id that is not even a valid key
        return None
    return job if job.origin in names else None
