"""``matcha worker``: the projection runners and an RQ worker, in one process.

* Three projection runners (threads; ``workers.projections``): archives,
  ratings and match summaries follow the log from their recorded positions,
  woken by the API's hints over Redis and every ``--poll`` seconds without
  one. They need only PostgreSQL: with Redis away they go on, a poll later.
* A listener for those hints (a thread), which subscribes again with backoff
  whenever Redis comes back, and then wakes the runners.
* An RQ worker (the main thread; ``workers.rq_worker``) for the jobs an
  operator asks for, which rides out a Redis restart and re-runs the job it
  was interrupted in.

Several workers share the work safely: each runner pass takes its
projection's row in PostgreSQL (no two apply the same stretch of the log),
and RQ hands each job to one worker. SIGTERM stops it within 10 s.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import click

from service.broker.channels import clocks_channel, projections_channel
from service.broker.jobs import queue_name, queues
from service.cli_defaults import database_options
from service.cli_defaults import database_url as local_database_or_given
from service.cli_defaults import redis_url as local_redis_or_given
from service.ops.logging import configure_logging
from service.ops.stopping import process_stop
from service.settings import load_settings
from workers import clocks, projections, rq_worker
from workers.projections import runner as runner_module
from workers.projections import wake


@click.command("worker")
@database_options
@click.option(
    "--redis-url",
    envvar="REDIS_URL",
    default=None,
    help="Where the queues and the hints live [REDIS_URL; else the Redis `make run` started].",
)
@click.option(
    "--burst", is_flag=True, help="Apply what the log holds and run the queued jobs, then exit."
)
@click.option(
    "--fork/--no-fork",
    default=True,
    show_default=True,
    help="Run each RQ job in a forked work horse (rq.Worker: a crashing job cannot"
    " take the worker down) or in the worker process (rq.SimpleWorker).",
)
@click.option(
    "--catch-up/--no-catch-up",
    default=True,
    show_default=True,
    help="Sweep for work the log positions cannot show (a failed build, history"
    " from before the runners), at start and every --catch-up-every seconds.",
)
@click.option(
    "--catch-up-every",
    type=float,
    default=runner_module.SWEEP_EVERY_S,
    show_default=True,
    help="Seconds between two sweeps (0: only at start).",
)
@click.option(
    "--poll",
    "poll_s",
    type=float,
    default=runner_module.POLL_S,
    show_default=True,
    help="Seconds a runner waits for a hint before it reads the log anyway.",
)
@click.option(
    "--projections/--no-projections",
    "run_projections",
    default=True,
    show_default=True,
    help="Run the projection runners (archives, ratings, summaries).",
)
def worker(
    database_url: str | None,
    data_dir: Path | None,
    redis_url: str | None,
    burst: bool,
    fork: bool,
    catch_up: bool,
    catch_up_every: float,
    poll_s: float,
    run_projections: bool,
) -> None:
    """Run a worker: replay archives, ratings and summaries from the log; RQ jobs."""
    database_url = local_database_or_given(database_url, data_dir)
    redis_url = local_redis_or_given(redis_url, data_dir)
    configure_logging()  # JSON lines, like the API's
    # The jobs read their database from the environment (workers.db).
    os.environ["DATABASE_URL"] = database_url
    os.environ["REDIS_URL"] = redis_url
    prefix = load_settings().redis.prefix
    rq_worker.install_stop_handlers()
    redis = rq_worker.redis_connection(redis_url)
    names = [q.name for q in queues(redis=redis, prefix=prefix)]

    if burst:
        if run_projections:
            done = projections.catch_up_all(database_url, sweep=catch_up)
            click.echo("caught up: " + ", ".join(f"{k} {v}" for k, v in done.items()))
        rq_worker.serve(names, redis, fork=fork, burst=True, with_scheduler=False)
        return

    stop = process_stop.event
    threads: list[threading.Thread] = []
    if run_projections:
        runners = projections.runners(
            database_url,
            stop,
            poll_s=poll_s,
            sweeps=catch_up,
            sweep_every_s=catch_up_every if catch_up_every > 0 else None,
        )

        def wake_hinted() -> None:
            for r in runners:
                if r.hinted:
                    r.wake.set()

        def wake_all() -> None:
            for r in runners:
                r.wake.set()

        process_stop.on_stop(wake_all)  # a runner waiting for a hint sees the stop at once
        threads += [runner_module.start(r) for r in runners]
        listener = wake.Listener(redis_url, prefix, wake_hinted, stop=stop)
        threads.append(wake.start(listener))
        click.echo(
            f"projections: {', '.join(r.name for r in runners)} (poll {poll_s:g} s,"
            f" hints on {projections_channel(prefix)})"
        )
    sweeper = clocks.SweeperThread(database_url, redis_url, prefix, stop).start()
    clock_hints = wake.Listener(
        redis_url, prefix, sweeper.wake, stop=stop, channel_name=clocks_channel(prefix)
    )
    threads += [sweeper.thread, wake.start(clock_hints)]
    click.echo(f"clocks: a sweeper of match_deadlines (hints on {clocks_channel(prefix)})")
    click.echo(f"queues: {', '.join(names)}")
    try:
        rq_worker.serve(names, redis, fork=fork)
    finally:
        process_stop.request("the RQ worker ended")
        for thread in threads:
            thread.join(timeout=max(0.1, process_stop.remaining() - 1.0))
    click.echo(f"worker on {queue_name('*', prefix)} stopped")
