"""Evidence in the API (three lines of ``service/app.py``).

* ``on_startup`` (``ON_STARTUP``): load the signing key and the keyring, make
  the store sign and check heads, publish the keys, find this store's
  checkpoint log. Signing never depends on a plug-in being mounted.
* ``EvidencePlugin`` (``PLUGINS``): a lifespan step, entered after the app's
  own, that runs the checkpointer as a bounded background task and stops it
  (with one last checkpoint) before the pool closes.
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
from service.evidence.service import Checkpointer, ends_match, load_service_evidence

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
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        try:
            await asyncio.wait_for(checkpointer.once(), STOP_TIMEOUT_S)
        except Exception:  # shutting down: the interval's checkpoints are on disk already
            log.warning("no final checkpoint at shutdown", exc_info=True)


class EvidencePlugin(InitPluginProtocol):
    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.append(evidence_lifespan)
        return app_config
