"""The PostgreSQL half of a failover on the harness's servers: the primary stopped,
the standby promoted, and the services' DATABASE_URL (both servers, read-write
chosen at connect) reaching the new primary with every acknowledged write."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from service.cluster.postgres_pair import postgres_pair
from service.processes import free_port

pytestmark = pytest.mark.timeout(180)


def test_given_the_primary_stopped_and_the_standby_promoted_then_writes_reach_it(
    cluster_dir: Path,
) -> None:
    with postgres_pair(cluster_dir / "promotion", free_port(), free_port()) as pair:
        writer = pair.writer_url()
        with psycopg.connect(writer, autocommit=True) as conn:
            assert conn.execute("SELECT current_setting('port')::int").fetchone() == (
                pair.primary.port,
            )
            conn.execute("CREATE TABLE acknowledged (n int PRIMARY KEY)")
            conn.execute("INSERT INTO acknowledged SELECT generate_series(1, 100)")
        pair.wait_replayed()  # what an asynchronous standby has had time to receive

        pair.primary.stop()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(writer, connect_timeout=2)  # a standby takes no writes
        pair.promote()

        with psycopg.connect(writer, autocommit=True) as conn:
            row = conn.execute(
                "SELECT current_setting('port')::int, pg_is_in_recovery()"
            ).fetchone()
            assert row == (pair.standby.port, False)
            assert conn.execute("SELECT count(*) FROM acknowledged").fetchone() == (100,)
            conn.execute("INSERT INTO acknowledged VALUES (101)")
