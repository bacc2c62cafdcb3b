"""The evidence a process holds: its keys, its checkpoint log, the checkpointer.

``load_service_evidence`` is what the API loads at start (the signing key
too); ``evidence_at`` is the public half for the console commands, found where
their settings (the data folder, the environment, their options) name it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psycopg_pool import AsyncConnectionPool

from service.evidence.checkpoints import (
    CheckpointLog,
    CheckpointLogEntry,
    checkpoint_log_for,
    write_checkpoint,
)
from service.evidence.config import (
    EvidenceSettings,
    load_public_keys,
    load_signer,
    publish_current_key,
)
from service.evidence.keys import Keyring, SigningKey
from service.evidence.sink import ObjectStoreSink, sink_from_settings

log = logging.getLogger("matcha.evidence")


@dataclass
class Evidence:
    settings: EvidenceSettings
    keyring: Keyring
    checkpoint_folder: Path
    checkpoints: CheckpointLog | None = None
    """This store's log, once the database is known (``bind``)."""
    signer: SigningKey | None = None
    sink: ObjectStoreSink | None = None

    _logs: dict[str, CheckpointLog] = field(default_factory=dict)

    async def bind(self, conn: Any) -> CheckpointLog:
        """The checkpoint log of the event store ``conn`` reaches (one object per
        store, kept: it reads only what was appended since its last read)."""
        found = await checkpoint_log_for(conn, self.checkpoint_folder)
        log_ = self._logs.setdefault(found.origin, found)
        if self.checkpoints is None:
            self.checkpoints = log_
        return log_


def load_service_evidence(settings: EvidenceSettings | None = None) -> Evidence:
    """The signing key (made on the first start of ``make run``), every public
    key, and the checkpoint log: what an API process signs and checks with."""
    settings = settings or EvidenceSettings()
    signer = load_signer(settings)
    publish_current_key(settings, signer)
    return Evidence(
        settings=settings,
        keyring=load_public_keys(settings, signer),
        checkpoint_folder=settings.checkpoint_folder,
        signer=signer,
        sink=sink_from_settings(settings),
    )


@functools.lru_cache(maxsize=8)
def evidence_at(settings: EvidenceSettings) -> Evidence | None:
    """The public keys and checkpoint log ``settings`` name, or None when they name
    none or hold no key (loaded once per process and settings: ``matcha audit --all``
    audits thousands of matches with one keyring and one read of each checkpoint log)."""
    if not settings.configured:
        return None
    keyring = load_public_keys(settings)
    if not len(keyring):
        return None
    return Evidence(
        settings=settings, keyring=keyring, checkpoint_folder=settings.checkpoint_folder
    )


MIN_GAP_S = 2.0
"""The least time between two checkpoints, however many matches end."""


@dataclass
class Checkpointer:
    """Signs a checkpoint every ``interval_s`` while matches change, and soon after
    a match ends (``poke``). One bounded background task per API process; several
    processes may share a checkpoint file (``CheckpointLog`` locks it)."""

    pool: AsyncConnectionPool
    evidence: Evidence
    interval_s: float
    _poked: asyncio.Event = field(default_factory=asyncio.Event)
    written: int = 0

    def poke(self) -> None:
        self._poked.set()

    async def once(self, *, force: bool = False) -> CheckpointLogEntry | None:
        signer = self.evidence.signer
        if signer is None:
            return None
        async with self.pool.connection() as conn:
            log_ = await self.evidence.bind(conn)
            entry = await write_checkpoint(conn, log_, signer, self.evidence.keyring, force=force)
        if entry is not None:
            self.written += 1
            if self.evidence.sink is not None:
                await self.evidence.sink.put(entry)
        return entry

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poked.wait(), self.interval_s)
            # Matches ending together share one checkpoint: at most one per
            # MIN_GAP_S (each one takes the append barrier for a moment).
            await asyncio.sleep(MIN_GAP_S)
            self._poked.clear()
            try:
                await self.once()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database or the disk: try again at the next tick
                log.exception("could not write a checkpoint")


def ends_match(stored: list[Any]) -> bool:
    """An append that ends or annuls a match: its head goes into a checkpoint at once."""
    return any(getattr(e, "type", None) in ("match_ended", "match_annulled") for e in stored)
