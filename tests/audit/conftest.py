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


# -- evidence: a signing key of the test's own, a signing store, the checkpoint log ------


class Keys:
    """The test's signing key and keyring, named in the environment (as deploy/ does)."""

    def __init__(self, folder: Any) -> None:
        from service.evidence.keys import Keyring, load_or_create_signing_key, save_keyring

        self.folder = folder
        self.key_path = folder / "keys" / "signing-key.pem"
        self.keyring_path = folder / "keys" / "public-keys.json"
        self.checkpoint_folder = folder / "checkpoints"
        self.signer, _ = load_or_create_signing_key(self.key_path)
        self.keyring = Keyring([self.signer.public()])
        save_keyring(self.keyring_path, self.keyring)


@pytest.fixture
def keys(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Keys:
    found = Keys(tmp_path)
    monkeypatch.setenv("MATCHA_SIGNING_KEY_FILE", str(found.key_path))
    monkeypatch.setenv("MATCHA_PUBLIC_KEYS_FILE", str(found.keyring_path))
    monkeypatch.setenv("MATCHA_CHECKPOINT_DIR", str(found.checkpoint_folder))
    return found


@pytest.fixture
def signed_store(pool: Any, keys: Keys) -> EventStore:
    """The store as the API runs it: it signs every append's head and checks heads."""
    return EventStore(pool, signer=keys.signer, verifier=keys.keyring)


@pytest.fixture
def evidence_audit(database_url: str, keys: Keys) -> Callable[..., Any]:
    """``await evidence_audit(match_id, receipts=(), checkpoint=True)``: the audit
    with the service's keys and (unless told not to) its checkpoint log."""
    from service.evidence.config import EvidenceSettings
    from service.evidence.service import Evidence

    async def run(match_id: str, receipts: Any = (), checkpoint: bool = True) -> AuditReport:
        folder = keys.checkpoint_folder if checkpoint else keys.folder / "no-checkpoints"
        evidence = Evidence(
            settings=EvidenceSettings(), keyring=keys.keyring, checkpoint_folder=folder
        )
        async with await AsyncConnection.connect(database_url, autocommit=True) as conn:
            return await audit_match(conn, match_id, evidence, receipts=receipts)

    return run


@pytest.fixture
def checkpoint(database_url: str, keys: Keys) -> Callable[[], Any]:
    """``await checkpoint()``: sign a checkpoint of the store now, as the API's checkpointer."""
    from service.evidence.checkpoints import checkpoint_log_for, write_checkpoint

    async def run() -> Any:
        async with await AsyncConnection.connect(database_url, autocommit=True) as conn:
            log = await checkpoint_log_for(conn, keys.checkpoint_folder)
            return await write_checkpoint(conn, log, keys.signer, keys.keyring, force=True)

    return run


@pytest.fixture
def forger_of(admin_database_url: str) -> Callable[[str], Forger]:
    return lambda match_id: Forger(admin_database_url, match_id)
