"""``matcha worker``: run an RQ worker on the ratings and replays queues.

At start, and every ``--catch-up-every`` seconds, it enqueues what the API's
after-commit hook may have missed (Redis was down, the API died between the
commit and the enqueue, a worker was killed mid-job): see
``workers.queue.catch_up``.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import click
import psycopg
from redis import Redis
from rq import SimpleWorker, Worker

from service.cli_defaults import database_options
from service.cli_defaults import database_url as local_database_or_given
from service.cli_defaults import redis_url as local_redis_or_given
from service.ops.jobs import TimedJob
from service.ops.logging import configure_logging
from service.settings import load_settings
from workers.queue import catch_up as enqueue_missed
from workers.queue import queues

log = logging.getLogger("matcha.workers")


def _catch_up_loop(
    url: str, redis: Redis, prefix: str, every: float, stop: threading.Event
) -> None:
    while not stop.wait(every):
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                enqueue_missed(conn, redis=redis, prefix=prefix)
        except Exception:  # keep trying: the next round repairs what this one missed
            log.exception("catch-up failed")


@click.command("worker")
@database_options
@click.option("--redis-url", envvar="REDIS_URL", default=None,
              help="Where the queues live [REDIS_URL; else the Redis `make run` started].")
@click.option("--burst", is_flag=True, help="Work until the queues are empty, then exit.")
@click.option("--fork/--no-fork", default=True, show_default=True,
              help="Run each job in a forked work horse (rq.Worker: a crashing job cannot take"
                   " the worker down) or in the worker process (rq.SimpleWorker: faster for"
                   " many small jobs).")
@click.option("--catch-up/--no-catch-up", default=True, show_default=True,
              help="Enqueue missed ratings updates and replay archives at start.")
@click.option("--catch-up-every", type=float, default=300.0, show_default=True,
              help="Seconds between two catch-ups while running (0: only at start).")
def worker(database_url: str | None, data_dir: Path | None, redis_url: str | None, burst: bool,
           fork: bool, catch_up: bool, catch_up_every: float) -> None:
    """Run a worker: Elo ratings of ladders and replay archives of finished matches."""
    database_url = local_database_or_given(database_url, data_dir)
    redis_url = local_redis_or_given(redis_url, data_dir)
    configure_logging()  # JSON lines, like the API's
    # The jobs read their database from the environment (workers.db).
    os.environ["DATABASE_URL"] = database_url
    os.environ["REDIS_URL"] = redis_url
    prefix = load_settings().redis.prefix
    redis = Redis.from_url(redis_url)
    listening = queues(redis=redis, prefix=prefix)
    if catch_up:
        with psycopg.connect(database_url, autocommit=True) as conn:
            found = enqueue_missed(conn, redis=redis, prefix=prefix)
        click.echo(f"catch-up: {found['ladders']} ladder(s), {found['archives']} archive(s)"
                   " enqueued")
    stop = threading.Event()
    if catch_up and catch_up_every > 0 and not burst:
        threading.Thread(
            target=_catch_up_loop, args=(database_url, redis, prefix, catch_up_every, stop),
            daemon=True, name="catch-up",
        ).start()
    cls = Worker if fork else SimpleWorker
    # TimedJob times every job into matcha_job_seconds (by job and outcome).
    rq_worker = cls(listening, connection=redis, job_class=TimedJob)
    click.echo(f"worker {rq_worker.name} on {', '.join(q.name for q in listening)}")
    try:
        rq_worker.work(burst=burst, with_scheduler=True, logging_level="INFO")
    finally:
        stop.set()

