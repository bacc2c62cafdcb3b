"""Evidence in the API (three lines of ``service/app.py``).

* ``on_startup`` (``ON_STARTUP``): load the signing key and the keyring, make
  the store sign and check heads, publish the keys, find this store's
  checkpoint log. Signing never depends on a plug-in being mounted.
* ``EvidencePlugin`` (``PLUGINS``): a lifespan step, entered after the app's
  own, that runs the checkpointer as a bounded background task and stops it
  (with one last checkpoint) before the pool closes, and follows the key files
  (``follow_keys``): ``matcha keys rotate`` takes effect without a restart.
* ``service.evidence.routes:ROUTES`` (``ROUTES``): keys, checkpoints, receipts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from anyio import to_thread
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol

from service.evidence.adapter import on_every_commit
from service.evidence.config import EvidenceSettings, load_public_keys
from service.evidence.keys import Keyring, SigningKey, load_signing_key
from service.evidence.service import (
    Checkpointer,
    Evidence,
    ends_match,
    load_service_evidence,
)

log = logging.getLogger("matcha.evidence")

STOP_TIMEOUT_S = 5.0
"""The last checkpoint at shutdown gets this long; the file already holds the others."""


UNSIGNED_FOR_BENCH = "MATCHA_BENCH_UNSIGNED"
"""Set to 1 only by bench/bench_evidence.py: the same API without signatures, to
measure what they cost. Never in a deployment (the audit would name every row)."""


async def on_startup(app: Litestar) -> None:
    evidence = await to_thread.run_sync(load_service_evidence)
    store = app.state.store
    if os.environ.get(UNSIGNED_FOR_BENCH) != "1":
        store.signer = evidence.signer
        store.verifier = evidence.keyring
    async with app.state.pool.connection() as conn:
        await evidence.bind(conn)
    app.state.evidence = evidence
    log.info(
        "signing with key %s; %d public keys; checkpoints in %s",
        evidence.signer.key_id if evidence.signer else None,
        len(evidence.keyring),
        evidence.checkpoints.path if evidence.checkpoints else None,
    )


KEYS_POLL_S = 2.0
"""How often a running API looks at its key files (a stat each): a rotation is in
effect within this long."""


def _stamp(settings: EvidenceSettings) -> tuple[tuple[int, int, int] | None, ...]:
    stamps: list[tuple[int, int, int] | None] = []
    for path in (settings.key_path, settings.keyring_path):
        try:
            st = path.stat()  # follows a symlink: a Kubernetes secret's swap changes it
        except OSError:
            stamps.append(None)
        else:
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(stamps)


def _reload(settings: EvidenceSettings) -> tuple[SigningKey, Keyring]:
    # Never load_or_create: a key file missing for a moment must not become a new key.
    signer = load_signing_key(settings.key_path)
    return signer, load_public_keys(settings, signer)


async def follow_keys(app: Litestar, evidence: Evidence, poll_s: float = KEYS_POLL_S) -> None:
    """Sign with the key on disk: when the signing key or the keyring file changes
    (``matcha keys rotate`` replaces both atomically), load them again and sign and
    check with them from the next append on; what the old key signed keeps verifying
    (it stays in the keyring). A file read half-written is read again next time."""
    seen = _stamp(evidence.settings)
    while True:
        await asyncio.sleep(poll_s)
        now = await to_thread.run_sync(_stamp, evidence.settings)
        if now == seen:
            continue
        try:
            signer, keyring = await to_thread.run_sync(_reload, evidence.settings)
        except (OSError, ValueError) as exc:
            log.warning("the key files changed but could not be read (%s); trying again", exc)
            continue
        seen = now
        before = evidence.signer.key_id if evidence.signer else None
        evidence.signer, evidence.keyring = signer, keyring
        if os.environ.get(UNSIGNED_FOR_BENCH) != "1":
            app.state.store.signer = signer
            app.state.store.verifier = keyring
        log.warning(
            "the key files changed: now signing with key %s (was %s); %d public keys",
            signer.key_id,
            before,
            len(keyring),
        )


@contextlib.asynccontextmanager
async def evidence_lifespan(app: Litestar) -> AsyncIterator[None]:
    evidence = getattr(app.state, "evidence", None)
    if evidence is None:  # on_startup is not in ON_STARTUP: nothing to checkpoint with
        yield
        return
    checkpointer = Checkpointer(
        app.state.pool, evidence, interval_s=evidence.settings.checkpoint_interval_s
    )
    app.state.checkpointer = checkpointer

    async def after_commit(match_id: str, stored: list[Any]) -> None:
        if ends_match(stored):
            checkpointer.poke()

    on_every_commit(app, after_commit)
    task = asyncio.create_task(checkpointer.run(), name="matcha-checkpointer")
    # Only where the keys were pointed at (matcha run, deploy/): an ad-hoc API's are its own.
    keys = (
        asyncio.create_task(follow_keys(app, evidence), name="matcha-follow-keys")
        if evidence.settings.configured
        else None
    )
    try:
        yield
    finally:
        for running in (task, keys):
            if running is not None:
                running.cancel()
        for running in (task, keys):
            if running is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await running
        try:
            await asyncio.wait_for(checkpointer.once(), STOP_TIMEOUT_S)
        except Exception:  # shutting down: the interval's checkpoints are on disk already
            log.warning("no final checkpoint at shutdown", exc_info=True)


class EvidencePlugin(InitPluginProtocol):
    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.append(evidence_lifespan)
        return app_config
