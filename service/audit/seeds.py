"""Which seed the audit deals from, and keeping the secret one out of the report.

The log reveals the seed when the match ends; the store keeps it beside the log
from the start (admins only). The audit re-folds with whichever fits the
match's commitment, the revealed one first, and scrubs the stored one from every
value it quotes unless the log itself revealed that very seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.events import MatchCreated
from service.audit.fairness import revealed_seed
from service.audit.refold import SeedSource, decode
from service.audit.rows import RawRow
from service.engine import dealing

HIDDEN = "<hidden until the match ends>"


def created_event(rows: Sequence[RawRow]) -> MatchCreated | None:
    """The match's creation, if its row holds a valid one."""
    for row in rows:
        if row.type == "match_created":
            event = decode(row)
            return event if isinstance(event, MatchCreated) else None
    return None


def fits(seed: str | None, created: MatchCreated | None) -> bool:
    """``seed`` is the one the match committed to, under the match's own scheme."""
    return (
        seed is not None
        and created is not None
        and dealing.valid_seed(seed)
        and dealing.expected_commitment(created, seed) == created.seed_commitment
    )


@dataclass(frozen=True)
class SeedChoice:
    seed: str | None
    """The seed to re-fold with (None: none fits the commitment)."""
    source: SeedSource | None
    revealed: str | None
    """What the log's match-ended event reveals, fitting or not."""
    secret: str | None
    """The stored seed when the log did not reveal it: never shown."""

    @property
    def salt_seed(self) -> str | None:
        """The seed the heads' signatures are blinded with."""
        return self.seed if self.seed is not None else self.revealed or self.secret


def choose_seed(rows: Sequence[RawRow], stored: str | None) -> SeedChoice:
    created = created_event(rows)
    revealed, _ = revealed_seed(rows)
    seed: str | None = None
    source: SeedSource | None = None
    if fits(revealed, created):
        seed, source = revealed, "revealed"
    elif fits(stored, created):
        seed, source = stored, "stored"
    secret = stored if stored is not None and stored != revealed else None
    return SeedChoice(seed=seed, source=source, revealed=revealed, secret=secret)


def scrubber(secret: str | None) -> Callable[[Any], Any]:
    """A function that replaces ``secret`` wherever it appears in a JSON value."""

    def scrub(value: Any) -> Any:
        if secret is None:
            return value
        if isinstance(value, str):
            return value.replace(secret, HIDDEN)
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [scrub(v) for v in value]
        return value

    return scrub


__all__ = ["HIDDEN", "SeedChoice", "choose_seed", "created_event", "fits", "scrubber"]
