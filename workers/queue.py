"""RQ queues of the workers, the after-commit hook that feeds them, and the catch-up.

Two queues, named with ``settings.redis.prefix`` so tests and tenants never
share one: ``<prefix>-ratings`` (``workers.ratings.update_ladder``) and
``<prefix>-replays`` (``workers.replays.drain_archives``, which builds the
archives asked for with ``request_archives`` in batches; ``build_archive`` for
one match).

Enqueueing is best effort. A command is committed before its hooks run, and a
Redis outage must never fail it; a job that was never enqueued is repaired by
:func:`catch_up` (run by ``matcha worker`` at start and every few minutes),
which compares each projection's recorded position with the log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from redis import Redis
from rq import Queue, Retry
from rq.job import Job

from service.settings import load_settings

if TYPE_CHECKING:
    import psycopg
    from litestar import Litestar

    from service.matches import Committed

log = logging.getLogger("matcha.workers.queue")

RATINGS = "ratings"
REPLAYS = "replays"

RATINGS_TIMEOUT_S = 3600
"""A full recompute of a million-match ladder takes seconds; an hour is a hung job."""
REPLAYS_TIMEOUT_S = 300
RESULT_TTL_S = 7 * 24 * 3600
"""How long a finished job (and its progress) can be read at GET /api/jobs/{id}."""
RETRY = Retry(max=3, interval=[1, 5, 30])
"""A job that fails, or whose worker died under it, runs again: jobs are idempotent."""

_clients: dict[str, Redis] = {}
_clients_lock = threading.Lock()


def redis_client(url: str | None = None) -> Redis:
    """A (cached) synchronous Redis client; RQ needs the blocking API.

    Short timeouts: an enqueue from the API must give up quickly when Redis
    is down, the catch-up repairs what was missed.
    """
    url = url or load_settings().redis.url
    if not url:
        raise RuntimeError("REDIS_URL is not set: the workers' queues live in Redis")
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            client = Redis.from_url(url, socket_connect_timeout=1.0, socket_timeout=5.0)
            _clients[url] = client
        return client


def queue_name(kind: str, prefix: str | None = None) -> str:
    prefix = load_settings().redis.prefix if prefix is None else prefix
    return f"{prefix}-{kind}"


def queue(kind: str, *, redis: Redis | None = None, prefix: str | None = None) -> Queue:
    return Queue(queue_name(kind, prefix), connection=redis or redis_client())


def queues(*, redis: Redis | None = None, prefix: str | None = None) -> list[Queue]:
    """The queues a worker listens on, ratings first: a leaderboard waits on them."""
    return [queue(kind, redis=redis, prefix=prefix) for kind in (RATINGS, REPLAYS)]


def enqueue_ladder_update(
    ladder_id: str, *, full: bool = False, redis: Redis | None = None, prefix: str | None = None
) -> Job:
    """Queue ``update_ladder(ladder_id)``; ``full`` rebuilds the ladder from scratch."""
    return queue(RATINGS, redis=redis, prefix=prefix).enqueue(
        "workers.ratings.update_ladder",
        ladder_id,
        full=full,
        job_timeout=RATINGS_TIMEOUT_S,
        result_ttl=RESULT_TTL_S,
        retry=RETRY,
        description=f"{'recompute' if full else 'update'} ratings of ladder {ladder_id}",
        meta={"kind": "ratings", "ladder_id": ladder_id, "full": full},
    )


def enqueue_archive(
    match_id: str, *, redis: Redis | None = None, prefix: str | None = None
) -> Job:
    """Queue ``build_archive(match_id)``: the replay archive of a finished match."""
    return queue(REPLAYS, redis=redis, prefix=prefix).enqueue(
        "workers.replays.build_archive",
        match_id,
        job_timeout=REPLAYS_TIMEOUT_S,
        result_ttl=3600,
        retry=RETRY,
        description=f"replay archive of match {match_id}",
        meta={"kind": "replay", "match_id": match_id},
    )


PENDING_BATCH = 500
"""Match ids a drain job takes from the pending set at a time (``build_archives`` of them)."""
DRAIN_FOR_S = 60.0
"""A drain job hands over to a fresh one after this long (well inside ``REPLAYS_TIMEOUT_S``)."""


def pending_key(prefix: str | None = None) -> str:
    """The set of matches whose archives are asked for and not yet being built."""
    return f"{queue_name(REPLAYS, prefix)}:pending"


DRAINERS = 4
"""Drain jobs at once at most: the first one asks for helpers while a backlog
lasts, so that several workers share it (``drain_archives``)."""


def drainer_key(prefix: str | None = None, slot: int = 0) -> str:
    """Set while drain job ``slot`` is queued or running (expires if its worker dies).

    Slot 0 is the drainer that ``request_archives`` queues; 1.. are its helpers.
    """
    key = f"{queue_name(REPLAYS, prefix)}:drainer"
    return key if slot == 0 else f"{key}:{slot}"


def request_archives(
    match_ids: Sequence[str], *, redis: Redis | None = None, prefix: str | None = None
) -> Job | None:
    """Ask for the archives of these matches; returns the drain job if this call queued one.

    The ids join a pending set, and a ``drain_archives`` job is queued unless
    one is already queued or running (the drainer key, taken with SET NX).
    That job takes the pending ids in batches until none is left, so matches
    that end together cost one job and a batched build (``build_archives``)
    instead of a job each, while a match that ends alone is queued at once and
    built as soon as a worker is free, as before. Why no id is left behind:
    the drainer gives the key back before it looks at the set a last time
    (``drain_archives``), and a caller adds its ids before it tries the key.
    """
    if not match_ids:
        return None
    prefix = load_settings().redis.prefix if prefix is None else prefix
    redis = redis or redis_client()
    redis.sadd(pending_key(prefix), *match_ids)
    if not redis.set(drainer_key(prefix), "queued", nx=True, ex=REPLAYS_TIMEOUT_S):
        return None
    return enqueue_drain(redis=redis, prefix=prefix)


def enqueue_drain(*, redis: Redis, prefix: str, slot: int = 0) -> Job:
    """Queue ``drain_archives`` (the caller holds the key of that ``slot``)."""
    return queue(REPLAYS, redis=redis, prefix=prefix).enqueue(
        "workers.replays.drain_archives",
        prefix,
        slot=slot,
        job_timeout=REPLAYS_TIMEOUT_S,
        result_ttl=3600,
        retry=RETRY,
        description="replay archives of the matches asked for",
        meta={"kind": "replays"},
    )


def fetch_job(job_id: str, *, redis: Redis | None = None, prefix: str | None = None) -> Job | None:
    """One of *our* jobs by id, or None (a job of another prefix is not ours to show)."""
    names = {queue_name(kind, prefix) for kind in (RATINGS, REPLAYS)}
    try:
        job = Job.fetch(job_id, connection=redis or redis_client())
    except Exception:  # NoSuchJobError, or an id that is not even a valid key
        return None
    return job if job.origin in names else None


# -- the after-commit hook ---------------------------------------------------------------


def jobs_for(
    match_id: str, ladder_id: str | None, types: Sequence[str]
) -> list[tuple[str, str]]:
    """Which jobs a batch of new events calls for: ``(kind, id)`` pairs.

    An annulment changes the ladder's ratings and the archive's result, so it
    calls for both, like an end.
    """
    jobs: list[tuple[str, str]] = []
    finished = "match_ended" in types or "match_annulled" in types
    if ladder_id is not None and finished:
        jobs.append((RATINGS, ladder_id))
    if finished:
        jobs.append((REPLAYS, match_id))
    return jobs


def make_hook(*, redis_url: str | None = None, prefix: str | None = None) -> Any:
    """The match core's after-commit hook: on MatchEnded / MatchAnnulled, enqueue.

    The enqueue itself is blocking Redis I/O, so it runs in a thread; any
    failure is logged and swallowed (the command is committed; catch-up repairs).
    """
    from anyio import to_thread

    async def hook(committed: Committed) -> None:
        match_id = committed.match_id
        types = [e.type for e in committed.stored]
        if "match_ended" not in types and "match_annulled" not in types:
            return
        try:
            ladder_id = committed.facts.ladder_id

            def enqueue() -> None:
                redis = redis_client(redis_url)
                for kind, ident in jobs_for(match_id, ladder_id, types):
                    if kind == RATINGS:
                        enqueue_ladder_update(ident, redis=redis, prefix=prefix)
                    else:
                        request_archives([ident], redis=redis, prefix=prefix)

            await to_thread.run_sync(enqueue)
        except Exception as exc:  # best effort: never fail a committed command
            log.warning("could not enqueue the end-of-match jobs of %s (%s); the worker's"
                        " catch-up will", match_id, exc)

    return hook


def on_startup(app: Litestar) -> None:
    """``service.api.app.ON_STARTUP`` entry: register the hook on the match service."""
    settings = app.state.settings
    if not settings.redis.url:
        log.warning("REDIS_URL is not set: ratings and replays are built on demand only")
        return
    app.state.matches.after_commit.append(
        make_hook(redis_url=settings.redis.url, prefix=settings.redis.prefix)
    )


# -- catch-up ----------------------------------------------------------------------------


CATCH_UP_ARCHIVES = 10_000
"""Archives enqueued per catch-up round at most (newest first); the next round goes on."""


def catch_up(
    conn: psycopg.Connection,
    *,
    redis: Redis | None = None,
    prefix: str | None = None,
    max_archives: int = CATCH_UP_ARCHIVES,
) -> dict[str, int]:
    """Enqueue what the after-commit hooks may have missed.

    * every ladder whose recorded position is behind its last match_ended /
      match_annulled event (a ladder never rated counts as position 0);
    * every finished match with no replay archive.
    Both are safe to over-enqueue: the jobs are idempotent.
    """
    behind = conn.execute(
        """SELECT c.data ->> 'ladder_id' AS ladder_id, max(e.position) AS last
           FROM events e
           JOIN events c ON c.match_id = e.match_id AND c.version = 1
           WHERE e.type IN ('match_ended', 'match_annulled')
             AND c.data ->> 'ladder_id' IS NOT NULL
           GROUP BY 1""",
    ).fetchall()
    positions: dict[str, int] = dict(
        conn.execute("SELECT ladder_id, position FROM ladder_projections").fetchall()
    )
    ladders = [ladder for ladder, last in behind if positions.get(ladder, 0) < last]
    missing = [
        m for (m,) in conn.execute(
            """SELECT e.match_id FROM events e
               WHERE e.type = 'match_ended'
                 AND NOT EXISTS (SELECT 1 FROM replay_archives r WHERE r.match_id = e.match_id)
               ORDER BY e.position DESC LIMIT %s""",
            (max_archives,),
        ).fetchall()
    ]
    for ladder_id in ladders:
        enqueue_ladder_update(ladder_id, redis=redis, prefix=prefix)
    request_archives(missing, redis=redis, prefix=prefix)
    if ladders or missing:
        log.info("catch-up: %d ladder(s) behind, %d archive(s) missing", len(ladders),
                 len(missing))
    return {"ladders": len(ladders), "archives": len(missing)}
