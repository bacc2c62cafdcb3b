"""The clustered shape's servers, started once per session from the Debian binaries
(``service.cluster``, what ``make cluster`` runs), each test on its own channels,
keys and database.

The tests that start those servers take about three and a half minutes together,
over the budget of ``make test``: they run with ``make cluster-test``
(``MATCHA_CLUSTER_TESTS=1``, also run by ``.ci/run``) and are skipped otherwise,
saying so; on a machine without ``redis-server`` 7, PostgreSQL 15 or nginx they
are skipped saying what is missing. The others (URLs, verdicts, one Redis) run
in ``make test``."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.cluster import postgres_pair, proxy, redis_nodes
from service.processes import free_port

FAILOVER_NODE_TIMEOUT_MS = 1000
"""A killed master's replica takes over about twice this later."""


SERVERS = {"cluster_dir", "redis_cluster", "healthy_cluster", "pg_pair"}
"""The fixtures that start servers: the tests using one are the clustered shape's."""
RUN_THEM = "MATCHA_CLUSTER_TESTS"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    why = redis_nodes.binaries_missing() or postgres_pair.binaries_missing()
    for item in items:
        if Path(str(item.fspath)).parent != here:
            continue
        if not SERVERS & set(getattr(item, "fixturenames", ())):
            continue
        item.add_marker(pytest.mark.cluster)
        missing = why or (proxy.binary_missing() if "proxy" in item.keywords else None)
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"the clustered shape cannot start: {missing}"))
        elif os.environ.get(RUN_THEM) != "1":
            item.add_marker(
                pytest.mark.skip(
                    reason="starts the clustered shape's servers: run with `make cluster-test`"
                    f" ({RUN_THEM}=1; about three and a half minutes, over make test's budget)"
                )
            )


@pytest.fixture(scope="session")
def cluster_dir() -> Iterator[Path]:
    # /tmp itself is open to all: the `postgres` system user (the servers run as it
    # under root) reaches a folder made here once it is traversable
    path = Path(tempfile.mkdtemp(prefix="matcha-cluster-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_cluster(cluster_dir: Path) -> Iterator[redis_nodes.RedisCluster]:
    ports = redis_nodes.free_node_ports()
    with redis_nodes.redis_cluster(
        cluster_dir / "redis", ports, node_timeout_ms=FAILOVER_NODE_TIMEOUT_MS
    ) as cluster:
        yield cluster


@pytest.fixture
def healthy_cluster(redis_cluster: redis_nodes.RedisCluster) -> Iterator[redis_nodes.RedisCluster]:
    """The cluster, whole again after the test: a node a test killed is started again
    and rejoins (as a replica), so the next test finds three masters with a replica each."""
    redis_cluster.wait_healthy()
    yield redis_cluster
    for node in redis_cluster.nodes:
        if not node.alive:
            redis_cluster.restart(node.port)
    redis_cluster.wait_healthy()


@pytest.fixture(scope="session")
def pg_pair(cluster_dir: Path) -> Iterator[postgres_pair.PostgresPair]:
    with postgres_pair.postgres_pair(cluster_dir / "postgres", free_port(), free_port()) as pair:
        yield pair
