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
from service.store.heads import head_salt, row_head_message

log = logging.getLogger("matcha.evidence.guard")

RESULTS_OF_LADDER = """
SELECT e.match_id, s.version, s.hash, s.recorded_at, s.key_id, s.signature, m.seed,
       e.position <= (SELECT coalesce(max(unsigned_up_to), 0) FROM evidence_epoch) AS legacy
FROM events e
JOIN events c ON c.match_id = e.match_id AND c.version = 1 AND c.type = 'match_created'
LEFT JOIN LATERAL (
    SELECT x.version, x.hash, x.recorded_at, x.key_id, x.signature FROM events x
    WHERE x.match_id = e.match_id AND x.version >= e.version AND x.signature IS NOT NULL
    ORDER BY x.version LIMIT 1) s ON true
LEFT JOIN match_seeds m ON m.match_id = e.match_id
WHERE e.type = 'match_ended' AND e.position > %(after)s AND e.position <= %(high)s
  AND c.data ->> 'ladder_id' = %(ladder)s
"""


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
    rows = cur.execute(
        RESULTS_OF_LADDER, {"ladder": ladder_id, "high": high, "after": after}
    ).fetchall()
    for match_id, version, hash_, recorded_at, key_id, signature, seed, legacy in rows:
        if legacy:
            continue
        if signature is None or not keyring.verify(
            key_id,
            row_head_message(
                key_id=key_id,
                match_id=match_id,
                version=version,
                hash_=bytes(hash_),
                recorded_at=recorded_at,
                salt=head_salt(seed),
            ),
            bytes(signature),
        ):
            forged.append(match_id)
    if forged:
        log.error(
            "ladder %s: %d results carry no service signature: not rated", ladder_id, len(forged)
        )
    return forged
