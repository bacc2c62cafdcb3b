"""What an idempotency key promises, and what its first use answered.

A key is the caller's (``actor``): the same key with the same request gets the
first result and appends nothing; the same key with another request (another
command, another match, other rules for a create) is refused with
``Conflict(idempotency_key_reused)``. The store records each key with the
append it made, in the same transaction (``EventStore.used_key``).
"""

from __future__ import annotations

import hashlib

import msgspec

from schemas.commands import Command
from service.errors import Conflict
from service.store import EventStore

_encoder = msgspec.json.Encoder()


def command_hash(match_id: str, command: Command) -> str:
    """The same command on the same match (its instant aside: a retry is taken
    later than the first try)."""
    timeless = msgspec.structs.replace(command, at=None)
    return hashlib.sha256(match_id.encode() + b"\0" + _encoder.encode(timeless)).hexdigest()


def start_hash(players: tuple[str, str], ruleset: str, ladder_id: str | None) -> str:
    """For a create: the same players, rules and ladder."""
    return hashlib.sha256(_encoder.encode(["start", players, ruleset, ladder_id])).hexdigest()


def _reused() -> Conflict:
    return Conflict(
        "This Idempotency-Key was already used for a different request.",
        code="idempotency_key_reused",
    )


async def earlier_start(
    store: EventStore, actor: str, key: str, request_hash: str | None
) -> tuple[str, int] | None:
    """(match id, version) of the create ``key`` made, or None if it is unused."""
    used = await store.used_key(actor, key)
    if used is None:
        return None
    if used[1] != request_hash:
        raise _reused()
    return used[0], used[2]


async def earlier_version(
    store: EventStore, match_id: str, actor: str, key: str, request_hash: str | None
) -> int | None:
    """The last version the command ``key`` first ran appended, or None if unused."""
    used = await store.used_key(actor, key)
    if used is None:
        return None
    if used[0] != match_id or used[1] != request_hash:
        raise _reused()
    return used[2]
