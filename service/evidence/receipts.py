"""Signed receipts: what a player keeps to prove the log once reached a version.

A receipt is the service's signature of one head of a match's log (the last
row of an accepted command's append), so making one costs nothing: the store
signed that head when it appended it (``service.store.heads``). Anyone holding
a receipt and the public key can check its signature offline at once; once
the match ends, its record (with the revealed seed) shows whether the log
still holds ``version`` with the hash the receipt blinds: a log that lacks
that version, or holds another hash there, was cut or rewritten. The hash is
blinded with a salt from the secret seed so that a receipt held during the
match reveals nothing about the rows it covers (``service.store.heads``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Protocol

import msgspec

from schemas.receipts import RECEIPT_FORMAT, Receipt
from service.matches import Accepted
from service.store.chain import format_recorded_at
from service.store.heads import blinded, head_message, head_salt

__all__ = [
    "RECEIPT_FORMAT",
    "Receipt",
    "decode_receipts",
    "last_receipt",
    "receipt_of",
    "receipt_of_answer",
]


class _Signed(Protocol):
    @property
    def match_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def hash(self) -> bytes: ...
    @property
    def key_id(self) -> str | None: ...
    @property
    def signature(self) -> bytes | None: ...
    @property
    def recorded_at(self) -> object: ...
    @property
    def blinded_hash(self) -> bytes | None: ...


class _Verifier(Protocol):
    def verify(self, key_id: str | None, message: bytes, signature: bytes | None) -> bool: ...
    def __contains__(self, key_id: object) -> bool: ...


def receipt_of(event: _Signed, salt: bytes | None = None) -> Receipt | None:
    """The receipt of a stored row that carries the service's signature (else None).

    The rows an append returns know what was signed; a row read back needs
    its match's ``salt`` (``heads.head_salt`` of the seed).
    """
    if event.signature is None or event.key_id is None:
        return None
    blind = event.blinded_hash
    if blind is None:
        if salt is None:
            return None
        blind = blinded(salt, event.hash)
    at = event.recorded_at
    return Receipt(
        match_id=event.match_id,
        version=event.version,
        blinded_hash=bytes(blind).hex(),
        server_time=at if isinstance(at, str) else format_recorded_at(at),  # type: ignore[arg-type]
        key_id=event.key_id,
        signature=base64.b64encode(bytes(event.signature)).decode(),
    )


def last_receipt(events: Sequence[_Signed], salt: bytes | None = None) -> Receipt | None:
    """The receipt of the last signed row among ``events`` (an append's rows, a log)."""
    for event in reversed(events):
        found = receipt_of(event, salt)
        if found is not None:
            return found
    return None


def receipt_of_answer(accepted: Accepted) -> Receipt | None:
    """The receipt of an accepted command, as HTTP and the seat's socket answer it:
    the signature of its last row (a replayed answer's row is read back, so its
    match's salt is needed)."""
    return last_receipt(accepted.stored, head_salt(accepted.folded.state.seed))


def receipt_problem(receipt: Receipt, keyring: _Verifier) -> str | None:
    """Why ``receipt`` is not a valid service signature (None: it is)."""
    if receipt.format != RECEIPT_FORMAT:
        return f"unknown receipt format {receipt.format!r}"
    try:
        blind = bytes.fromhex(receipt.blinded_hash)
        signature = base64.b64decode(receipt.signature, validate=True)
    except (ValueError, binascii.Error):
        return "the receipt does not verify: its hash or signature is not valid hex / base64"
    message = head_message(
        key_id=receipt.key_id,
        match_id=receipt.match_id,
        version=receipt.version,
        blinded_hash=blind,
        recorded_at=receipt.server_time,
    )
    if not keyring.verify(receipt.key_id, message, signature):
        return f"the signature does not verify with key {receipt.key_id!r}" + (
            "" if receipt.key_id in keyring else " (a key this keyring does not hold)"
        )
    return None


def receipt_holds(receipt: Receipt, chain_hash: bytes, seed: str | None) -> bool:
    """The receipt blinds ``chain_hash`` (the log's hash at its version)."""
    return blinded(head_salt(seed), chain_hash).hex() == receipt.blinded_hash


_decoder = msgspec.json.Decoder(Receipt)
_list_decoder = msgspec.json.Decoder(list[Receipt])


def decode_receipts(data: bytes | str) -> list[Receipt]:
    """One receipt, a JSON list of them, or one per line (what the web client exports)."""
    text = data.decode() if isinstance(data, bytes) else data
    stripped = text.strip()
    if stripped.startswith("["):
        return _list_decoder.decode(stripped)
    try:
        return [_decoder.decode(stripped)]
    except msgspec.DecodeError:
        return [_decoder.decode(line) for line in stripped.splitlines() if line.strip()]
