"""Fixtures for the workers' tests: the test's own database (as the app role)
and a Redis client; queues are the test's own through ``redis_prefix``.
The HTTP tests reuse the API tests' client (tests/api/api_harness.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from redis import Redis

from workers import db

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))


@pytest.fixture
def redis(redis_server_url: str) -> Iterator[Redis]:
    client = Redis.from_url(redis_server_url)
    yield client
    client.close()


@pytest.fixture
def conn(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[psycopg.Connection]:
    """An autocommit connection; jobs run in this process find the same database."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    with psycopg.connect(database_url, autocommit=True) as c:
        yield c
    db.close_connections()
