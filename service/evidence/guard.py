"""Which results a projection must not count: those the service never signed.

A match cloned under a new id, or a result appended, by someone with only the
database role carries no valid service signature. The ratings recompute asks
``forged_results`` for the ladder's matches whose ``match_ended`` event no
valid signature covers (its own, or that of the first signed row after it,
which commits to it through the chain) and leaves them out, as it leaves out
annulled matches. Rows from before signatures (migration 0025) count as they
are. Without public keys in the environment (``service.evidence.config``)
nothing can be judged and nothing is left out (logged once).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from service.evidence.config import EvidenceSettings, load_public_keys
from service.evidence.keys import Keyring
from service.store import matchlog
from service.store.events import head_is_signed
from service.store.heads import head_salt
from service.store.ops import run

log = logging.getLogger("matcha.evidence.guard")


@lru_cache(maxsize=8)
def _keyring(settings: EvidenceSettings) -> Keyring | None:
    if not settings.configured:
        log.warning("no public keys configured: the ratings count unsigned results too")
        return None
    keyring = load_public_keys(settings)
    return keyring if len(keyring) else None


def forged_results(
    cur: Any, ladder_id: str, high: int, *, after: int = 0, keyring: Keyring | None = None
) -> list[str]:
    """Ids of the ladder's matches whose result (position in ``(after, high]``) no
    valid service signature covers. ``cur``: a psycopg (sync) cursor."""
    keyring = keyring or _keyring(EvidenceSettings())
    if keyring is None:
        return []
    forged: list[str] = []
    covers = run(cur.connection, matchlog.signed_covers_of_results(ladder_id, after, high))
    for cover in covers:
        if cover.legacy:
            continue
        signed = cover.signed
        if signed is None or not head_is_signed(keyring, signed, head_salt(signed.seed)):
            forged.append(cover.match_id)
    if forged:
        log.error(
            "ladder %s: %d results carry no service signature: not rated", ladder_id, len(forged)
        )
    return forged
