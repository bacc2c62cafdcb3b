"""A receipt: the service's signature of one head of a match's log (docs/audit.md
"Receipts"). Part of the contract: command answers, a seat's live frames, the
record export and disputes carry it; ``service.evidence.receipts`` makes and checks it."""

from typing import Annotated, Final

import msgspec

from schemas.bounds import Positive

RECEIPT_FORMAT: Final = "matcha-receipt/1"


class Receipt(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    format: str = RECEIPT_FORMAT
    match_id: str
    version: Positive
    blinded_hash: str
    """``heads.blinded(salt, chain hash of version)``, hex."""
    server_time: str
    """When the service appended it (UTC, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``)."""
    key_id: str
    signature: str
    """Ed25519 over ``service.store.heads.head_message``, standard base64."""


MAX_PRESENTED: Final = 1000
"""Receipts one request may present (a match has a few dozen appends at most)."""


class ReceiptsBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Receipts a player presents: to check them (``POST …/receipts/check``) or to
    audit the log against them (``POST /api/admin/matches/{id}/audit``)."""

    receipts: Annotated[list[Receipt], msgspec.Meta(max_length=MAX_PRESENTED)]
