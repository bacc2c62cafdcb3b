"""Evidence in the API: one Litestar init plugin (``service.api.app.PLUGINS``).

It adds the evidence routes and a lifespan step that runs after the app's
own (the pool, the store and the match service exist by then): load the
signing key and the keyring, make the store sign and check heads, publish
the keys, and run the checkpointer as a bounded background task that stops
(with one last checkpoint) before the pool closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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


@contextlib.asynccontextmanager
async def evidence_lifespan(app: Litestar) -> AsyncIterator[None]:
    evidence = await to_thread.run_sync(load_service_evidence)
    store = app.state.store
    store.signer = evidence.signer
    store.verifier = evidence.keyring
    async with app.state.pool.connection() as conn:
        await evidence.bind(conn)
    app.state.evidence = evidence
    checkpointer = Checkpointer(
        app.state.pool, evidence, interval_s=evidence.settings.checkpoint_interval_s
    )
    app.state.checkpointer = checkpointer

    async def after_commit(match_id: str, stored: list[Any]) -> None:
        if ends_match(stored):
            checkpointer.poke()

    on_every_commit(app, after_commit)
    log.info(
        "signing with key %s; %d public keys; checkpoints in %s",
        evidence.signer.key_id if evidence.signer else None,
        len(evidence.keyring),
        evidence.checkpoints.path if evidence.checkpoints else None,
    )
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
        from service.evidence.routes import ROUTES

        app_config.route_handlers.extend(ROUTES)
        app_config.lifespan.append(evidence_lifespan)
        return app_config
