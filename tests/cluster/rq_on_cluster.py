"""RQ through ``workers.rq_cluster`` on a Redis Cluster, in a process of its own.

``RQ_KEY_PREFIX`` is read when rq is imported, so a process that runs RQ on a
cluster is started with it (``tests/cluster/test_rq_cluster.py`` does, as
``make cluster`` does for the workers). Run as
``python -m tests.cluster.rq_on_cluster <cluster url> <queue name>``; prints one
``REPORT {json}`` line per phase, and waits for a line on stdin between them (the test kills
the master of RQ's slot meanwhile).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta

from redis.exceptions import ConnectionError, TimeoutError
from rq import Queue
from rq.job import Job
from rq.registry import ScheduledJobRegistry

from service.broker import jobs
from workers import rq_cluster
from workers.rq_worker import serve

JOB = "tests.cluster.rq_jobs.add"
FAILOVER_WAIT_S = 40.0
REPORT = "REPORT "
"""Begins the lines the test reads (RQ logs to stdout too)."""


def _served_by(conn: object) -> int:
    pool = conn.connection_pool  # type: ignore[attr-defined]
    c = pool.get_connection()
    try:
        return int(c.port)
    finally:
        pool.release(c)


def main(url: str, name: str) -> None:
    conn = rq_cluster.connection(url, socket_connect_timeout=2.0)
    queue = Queue(name, connection=conn)
    now = queue.enqueue(JOB, 2, 3)
    due = queue.enqueue_at(datetime.now(UTC) - timedelta(seconds=1), JOB, 10, 20)
    later = queue.enqueue_in(timedelta(hours=1), JOB, 1, 1)
    assert due.get_status() == "scheduled"
    # What the API enqueues (service.broker.jobs, its own cached client): a ladder's
    # update, coalesced while it waits (its pending key beside RQ's, in the slot).
    api = jobs.redis_client(url)
    update = jobs.enqueue_ladder_update(f"ladder-{name}", redis=api, prefix=name)
    again = jobs.enqueue_ladder_update(f"ladder-{name}", redis=api, prefix=name)
    archive = jobs.enqueue_archive(f"match-{name}", redis=api, prefix=name)
    serve([name], conn, fork=False, burst=True, with_scheduler=True)
    for job in (now, due, later):
        job.refresh()
    print(
        REPORT
        + json.dumps(
            {
                "prefix": rq_cluster.rq_key_prefix(),
                "now": [now.get_status(), now.return_value()],
                "due": [due.get_status(), due.return_value()],
                "later": [later.get_status(), later.id in ScheduledJobRegistry(queue=queue)],
                "jobs": [now.id, due.id, later.id, update.id, archive.id],
                "coalesced": again.id == update.id,
                "pending_key": jobs.pending_update_key(f"ladder-{name}", False, name),
                "api_served_by": _served_by(api),
                "served_by": _served_by(conn),
            }
        ),
        flush=True,
    )
    sys.stdin.readline()  # the master of the slot is killed meanwhile

    # The same client, after the failover: it finds the new master by itself. An
    # enqueue fails while the slot has none (as the API's would), and is tried again.
    deadline = time.monotonic() + FAILOVER_WAIT_S
    failures = 0
    while True:
        try:
            after = queue.enqueue(JOB, 3, 4)
            break
        except (ConnectionError, TimeoutError):
            failures += 1
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    serve([name], conn, fork=False, burst=True, with_scheduler=True)
    after = Job.fetch(after.id, connection=conn)
    print(
        REPORT
        + json.dumps(
            {
                "after": [after.get_status(), after.return_value()],
                "enqueue_failures": failures,
                "served_by": _served_by(conn),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
