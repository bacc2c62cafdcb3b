"""Where the tests find PostgreSQL and Redis, in this order:

1. the URLs in MATCHA_TEST_DATABASE_URL / MATCHA_TEST_REDIS_URL;
2. testcontainers, where a Docker engine answers;
3. the embedded servers `make run` uses on a bare machine (service.embedded).

Each test then gets its own database (and its own Redis key prefix), so
tests never share state.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.fixture(scope="session")
def _server_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="matcha-test-servers-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server_url(_server_dir: Path) -> Iterator[str]:
    """A PostgreSQL server URL with superuser rights (to create per-test databases)."""
    url = os.environ.get("MATCHA_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16-alpine", driver=None) as pg:
            yield pg.get_connection_url()
        return
    from service.embedded import start_postgres

    url, server = start_postgres(_server_dir / "pg")
    try:
        yield url
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def redis_server_url(_server_dir: Path) -> Iterator[str]:
    url = os.environ.get("MATCHA_TEST_REDIS_URL")
    if url:
        yield url
        return
    if _docker_answers():
        from testcontainers.redis import RedisContainer

        with RedisContainer("redis:7-alpine") as rc:
            host = rc.get_container_host_ip()
            port = rc.get_exposed_port(6379)
            yield f"redis://{host}:{port}/0"
        return
    from service.embedded import start_redis

    url, server = start_redis(_server_dir / "redis")
    try:
        yield url
    finally:
        server.shutdown()


@pytest.fixture
def redis_prefix() -> str:
    """A key/channel/queue prefix of this test's own (Redis pub/sub ignores DB numbers)."""
    return f"t{uuid.uuid4().hex[:12]}"
