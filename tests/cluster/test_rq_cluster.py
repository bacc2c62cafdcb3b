"""workers/rq_cluster.py: RQ enqueues, works and schedules on the Redis Cluster of
``make cluster``, every key in one slot, and follows that slot to a new master."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import IO, Any

import pytest

from service.cluster.redis_nodes import RedisCluster
from workers import rq_cluster

from .rq_on_cluster import REPORT

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
LINE_WAIT_S = 90.0


def _lines(stream: IO[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            if line.startswith(REPORT):
                lines.put(line[len(REPORT) :])

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _report(lines: queue.Queue[str], proc: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        line = lines.get(timeout=LINE_WAIT_S)
    except queue.Empty:
        proc.kill()
        assert proc.stderr is not None
        said = proc.stderr.read()[-3000:]
        raise AssertionError(f"no report from the RQ process:\n{said}") from None
    report: dict[str, Any] = json.loads(line)
    return report


def _keys(cluster: RedisCluster, port: int) -> list[str]:
    node = cluster.node(port).client()
    try:
        return [k.decode() for k in node.scan_iter(count=1000)]
    finally:
        node.close()


def test_given_rq_keys_in_one_slot_then_jobs_are_queued_worked_and_scheduled_and_follow_a_failover(
    healthy_cluster: RedisCluster,
) -> None:
    cluster = healthy_cluster
    name = f"rq-cluster-{uuid.uuid4().hex[:8]}"
    slot_master = cluster.master_of(rq_cluster.HASH_TAGGED_PREFIX)
    (replica,) = [p for p, m in cluster.layout().items() if m == slot_master]
    env = {**os.environ, "RQ_KEY_PREFIX": rq_cluster.HASH_TAGGED_PREFIX}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.cluster.rq_on_cluster", cluster.url, name],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        lines = _lines(proc.stdout)
        first = _report(lines, proc)
        assert first["prefix"] == "{rq}"
        assert first["now"] == ["finished", 5]
        assert first["due"] == ["finished", 30], "the scheduler queued the job that was due"
        assert first["later"] == ["scheduled", True], "a job due in an hour still waits"
        assert first["served_by"] == slot_master
        assert first["api_served_by"] == slot_master, "the API's enqueues reach it too"
        assert first["coalesced"], "a ladder's waiting update is not queued twice"
        assert first["pending_key"].startswith("{rq}:"), first["pending_key"]

        # Every key RQ wrote is in the one slot, on its master: none anywhere else.
        jobs = first["jobs"]
        ours = [k for k in _keys(cluster, slot_master) if name in k or any(j in k for j in jobs)]
        assert ours and all(k.startswith("{rq}:") for k in ours), ours
        assert {f"{{rq}}:job:{j}" for j in jobs} <= set(ours)
        assert f"{{rq}}:scheduled:{name}" in ours
        for master in set(cluster.masters()) - {slot_master}:
            elsewhere = [k for k in _keys(cluster, master) if "rq" in k]
            assert elsewhere == [], (master, elsewhere)

        cluster.kill(slot_master)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        second = _report(lines, proc)
        assert second["after"] == ["finished", 7]
        assert second["served_by"] == replica, "the slot's new master: the former replica"
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_given_rq_imported_without_a_hash_tag_then_a_cluster_connection_is_refused_saying_how(
    healthy_cluster: RedisCluster,
) -> None:
    assert rq_cluster.rq_key_prefix() == os.environ.get("RQ_KEY_PREFIX", "rq")
    if rq_cluster.hash_tag(rq_cluster.rq_key_prefix()) is not None:
        pytest.skip("this test process itself runs RQ with a hash tag")
    with pytest.raises(rq_cluster.NotOneSlot, match=r"RQ_KEY_PREFIX=\{rq\}"):
        rq_cluster.connection(healthy_cluster.url)


@pytest.mark.parametrize(
    ("prefix", "tag"),
    [("{rq}", "rq"), ("{matcha}:rq", "matcha"), ("rq", None), ("{}rq", None), ("rq{", None)],
)
def test_given_a_key_prefix_then_its_hash_tag_is_what_redis_hashes(
    prefix: str, tag: str | None
) -> None:
    assert rq_cluster.hash_tag(prefix) == tag
