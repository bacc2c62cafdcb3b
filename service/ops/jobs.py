"""RQ jobs timed into `matcha_job_seconds` without each job timing itself.

`matcha worker` passes `job_class=TimedJob` to its RQ worker: every job's run
is then observed under the job function's name (`update_ladder`,
`build_archive`, ...) with outcome `ok` or `failed`. RQ runs each job in a
forked process, so the worker needs `PROMETHEUS_MULTIPROC_DIR` (as
`matcha run` and deploy/ set it) for the numbers to outlive that process.
"""

from __future__ import annotations

from typing import Any

from rq.job import Job

from service.ops.metrics import time_job


def job_name(job: Job) -> str:
    return (job.func_name or "unknown").rsplit(".", 1)[-1]


class TimedJob(Job):
    def perform(self) -> Any:
        with time_job(job_name(self)):
            return super().perform()
