"""A receipt: the service's signature of one head of a match's log (docs/audit.md
"Receipts"). Part of the contract: command answers, a seat's live frames, the
record export and disputes carry it; ``service.evidence.receipts`` makes and checks it."""

from typing import Final

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
