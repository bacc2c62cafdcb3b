"""The operators' queues: one pending ratings update per ladder, jobs of our prefix only."""

from __future__ import annotations

import signal

from redis import Redis

from service.broker.jobs import enqueue_ladder_update, fetch_job, queue, queues


def test_a_ladder_update_asked_for_again_while_it_waits_is_the_same_job(
    redis: Redis, redis_prefix: str
) -> None:
    first = enqueue_ladder_update("lad-1", redis=redis, prefix=redis_prefix)
    again = enqueue_ladder_update("lad-1", redis=redis, prefix=redis_prefix)
    other = enqueue_ladder_update("lad-2", redis=redis, prefix=redis_prefix)
    recompute = enqueue_ladder_update("lad-1", full=True, redis=redis, prefix=redis_prefix)
    assert again.id == first.id  # one pending update per ladder
    assert len({first.id, other.id, recompute.id}) == 3  # per ladder, per kind
    ratings = queue("ratings", redis=redis, prefix=redis_prefix)
    assert ratings.count == 3

    # Once it has run, asking again queues a new one (the log may have moved since).
    ratings.empty()
    later = enqueue_ladder_update("lad-1", redis=redis, prefix=redis_prefix)
    assert later.id != first.id and ratings.count == 1
    assert fetch_job(later.id, redis=redis, prefix=redis_prefix) is not None
    assert fetch_job(later.id, redis=redis, prefix=redis_prefix + "x") is None
    ratings.empty()


def test_the_worker_takes_from_its_queues_in_turn(redis: Redis, redis_prefix: str) -> None:
    from workers import rq_worker

    ratings, replays = queues(redis=redis, prefix=redis_prefix)
    jobs = [ratings.enqueue("time.perf_counter", result_ttl=60) for _ in range(3)]
    jobs += [replays.enqueue("time.perf_counter", result_ttl=60) for _ in range(3)]
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        rq_worker.serve(
            [ratings.name, replays.name], redis, fork=False, burst=True, with_scheduler=False
        )
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    ran = sorted(jobs, key=lambda job: job.latest_result().return_value)
    # Never three ratings jobs before the first archive job: they alternate.
    assert [job.origin.rsplit("-", 1)[-1] for job in ran] == ["ratings", "replays"] * 3
