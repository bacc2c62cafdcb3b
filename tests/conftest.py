"""Where the tests find PostgreSQL and Redis, in this order:

1. the URLs in MATCHA_TEST_DATABASE_URL / MATCHA_TEST_REDIS_URL;
2. testcontainers, where a Docker engine answers;
3. the embedded servers `make run` uses on a bare machine (service.embedded).

Each test then gets its own database (and its own Redis key prefix), so
tests never share state: `database_url` is a fresh database cloned from a
template migrated once per session, reached as the service's own role
`matcha_app` (so tests exercise the real grants); `admin_database_url` is the
same database as a superuser (for tampering tests).

Async tests use **anyio** (its pytest plugin ships with anyio, which litestar
needs anyway): mark them `@pytest.mark.anyio`; the `anyio_backend` fixture
below pins asyncio. Async fixtures (`pool`, `store`) work in those tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from service.store.events import EventStore


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


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def database_template(pg_server_url: str) -> Iterator[str]:
    """Name of a database migrated once for this session; tests clone it.

    Named per session so concurrent test runs (other engineers, xdist workers)
    never share a template: CREATE DATABASE ... TEMPLATE needs it idle.
    """
    from service.store.db import scratch_database, with_database
    from service.store.migrate import apply_migrations

    with scratch_database(pg_server_url, "matcha_template_") as name:
        apply_migrations(with_database(pg_server_url, name))
        yield name


@pytest.fixture
def _test_database(pg_server_url: str, database_template: str) -> Iterator[str]:
    from service.store.db import scratch_database

    with scratch_database(pg_server_url, "t_", template=database_template) as name:
        yield name


@pytest.fixture
def database_url(pg_server_url: str, _test_database: str) -> str:
    """A fresh, migrated database of this test's own, as the app role `matcha_app`."""
    from service.store.db import with_database

    return with_database(pg_server_url, _test_database, user="matcha_app")


@pytest.fixture
def admin_database_url(pg_server_url: str, _test_database: str) -> str:
    """The same database as `database_url`, as a superuser (to tamper with it)."""
    from service.store.db import with_database

    return with_database(pg_server_url, _test_database)


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[AsyncConnectionPool]:
    """An open connection pool on this test's database (app role). anyio tests only."""
    from service.store.db import open_pool

    opened = await open_pool(database_url, min_size=1, max_size=10)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def store(pool: AsyncConnectionPool) -> EventStore:
    from service.store.events import EventStore

    return EventStore(pool)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Browser tests last. Playwright's sync API keeps an event loop marked running
    in the main thread for as long as its session-wide browser lives, and every
    async (anyio) test collected after it would then fail to start its own loop."""
    web = Path(__file__).parent / "web"
    items.sort(key=lambda item: Path(str(item.path)).is_relative_to(web))


_OWN_BASETEMP = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """Each run's temporary folders in a folder of its own (``--basetemp``), not in the
    shared ``/tmp/pytest-of-<user>``: as root the embedded PostgreSQL runs as the
    ``pgserver`` user, which must traverse to its data folder, and every pytest run
    that starts meanwhile sets that shared folder back to 0700 (two suites at once:
    ``could not open file ... pg_control: Permission denied``). xdist's workers are
    given ``<basetemp>/popen-gwN`` by the controller, so only the controller picks."""
    if config.option.basetemp or hasattr(config, "workerinput"):
        return
    base = Path(tempfile.mkdtemp(prefix="matcha-pytest-"))
    base.chmod(0o755)
    config.option.basetemp = str(base / "run")
    config.stash[_OWN_BASETEMP] = base


def pytest_unconfigure(config: pytest.Config) -> None:
    base = config.stash.get(_OWN_BASETEMP, None)
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)
