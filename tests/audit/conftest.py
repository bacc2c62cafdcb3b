"""Fixtures for the audit tests: a finished match in a real store, and the
superuser tools a forger would use on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from audit_forgery import Forger, append_batches, good_match, rich
from audit_matches import Batch
from psycopg import AsyncConnection

from service.audit import AuditReport, audit_match
from service.store.events import EventStore


@pytest.fixture
async def finished(store: EventStore) -> tuple[str, str, list[Batch]]:
    """A finished standard match of two hands or more, appended through the store."""
    seed, batches = good_match("m-audit", rich)
    await append_batches(store, "m-audit", seed, batches)
    return "m-audit", seed, batches


@pytest.fixture
def forger(admin_database_url: str, finished: tuple[str, str, list[Batch]]) -> Forger:
    return Forger(admin_database_url, finished[0])


@pytest.fixture
def audit(database_url: str) -> Callable[[str], Any]:
    """``await audit(match_id)``: the report, read as the app role (as the API does)."""

    async def run(match_id: str) -> AuditReport:
        async with await AsyncConnection.connect(database_url, autocommit=True) as conn:
            return await audit_match(conn, match_id)

    return run
