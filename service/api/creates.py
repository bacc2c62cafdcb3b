"""Creates that are safe to resend: the ``Idempotency-Key`` of a POST that makes something.

The rules are the moves' (docs/api.md "Idempotency keys"): a request sent again
with the same key and the same request gets the first answer, byte for byte,
and creates nothing; the same key with another request is a 409
``idempotency_key_reused``; a key names one create of one kind (a ladder, a
challenge, a match) for one caller.

* Ladders and challenges (``create_once``): the key, the request's hash and the
  first answer are kept in ``create_requests``, written in the same
  transaction as what was created. Two resends racing wait for each other on
  a lock keyed by (kind, caller, key), so the second finds the first's answer.
* Matches (``match_key``): a match is created by appending its first events,
  and the event store already keeps an append's key with its events; the
  match id is derived from the caller and the key (a name-based UUID), so a
  resend appends to the same match, meets its own key, and gets the first
  result back (``MatchService.start``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import msgspec
from litestar import Response
from litestar.params import HeaderParameter
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from service.errors import Conflict

IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        max_length=200,
        description="A resend with the same key and the same request returns the first"
        " answer and creates nothing; the same key with another request is a 409.",
    ),
]

REPLAYED_HEADER = "Idempotent-Replayed"
"""``true`` on an answer that is the first answer of an earlier request."""

_JSON = "application/json"
_encoder = msgspec.json.Encoder()

T = TypeVar("T")


def request_hash(kind: str, *parts: object) -> str:
    """What a key promises: the same kind of create with the same request."""
    return hashlib.sha256(_encoder.encode([kind, *parts])).hexdigest()


def _reused() -> Conflict:
    return Conflict(
        "This Idempotency-Key was already used for a different request.",
        code="idempotency_key_reused",
    )


async def create_once(
    pool: AsyncConnectionPool,
    *,
    actor: str,
    key: str | None,
    kind: str,
    request: str,
    create: Callable[[AsyncConnection[Any]], Awaitable[tuple[str, Any]]],
    status_code: int = 201,
) -> Response[Any]:
    """Run ``create(conn)`` (it returns the new resource's id and the answer) once per key.

    Without a key it simply runs. With one, in one transaction: wait for any
    request with the same key, answer a resend from ``create_requests``, or
    create and keep the answer there.
    """
    async with pool.connection() as conn:
        if key is None:
            _, answer = await create(conn)
            return Response(answer, status_code=status_code)
        async with conn.transaction():
            # One request per (kind, caller, key) at a time: a resend that arrives
            # while the first is still being created waits here for its commit.
            # Transaction-scoped, so released by COMMIT or ROLLBACK on every path.
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"create:{kind}:{actor}:{key}",),
            )
            cur = await conn.execute(
                "SELECT request_hash, status, response FROM create_requests"
                " WHERE actor = %s AND kind = %s AND key = %s",
                (actor, kind, key),
            )
            earlier = await cur.fetchone()
            if earlier is not None:
                if earlier[0] != request:
                    raise _reused()
                return Response(
                    bytes(earlier[2]),
                    status_code=int(earlier[1]),
                    media_type=_JSON,
                    headers={REPLAYED_HEADER: "true"},
                )
            resource_id, answer = await create(conn)
            body = _encoder.encode(answer)
            await conn.execute(
                "INSERT INTO create_requests"
                " (actor, key, kind, request_hash, resource_id, status, response)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (actor, key, kind, request, resource_id, status_code, body),
            )
    return Response(body, status_code=status_code, media_type=_JSON)


# -- matches ------------------------------------------------------------------------------

_MATCH_IDS = uuid.UUID("5f0c7a52-6d61-7463-6861-2d6d61746368")
"""The namespace of match ids derived from idempotency keys (any fixed UUID)."""


class MatchKey(msgspec.Struct, frozen=True, kw_only=True):
    """How a keyed match creation is stored with the match's first events."""

    match_id: str
    """A name-based UUID of the caller and the key: a resend names the same match."""
    store_key: str
    """The key as the event store keeps it (the creating events' actor is ``system``,
    so the caller is part of the key)."""
    request_hash: str


def match_key(actor: str, key: str, request: str) -> MatchKey:
    return MatchKey(
        match_id=str(uuid.uuid5(_MATCH_IDS, f"{actor}\0{key}")),
        store_key=f"create-match:{actor}:{key}",
        request_hash=request,
    )


async def earlier_match(pool: AsyncConnectionPool, found: MatchKey) -> int | None:
    """The version the keyed creation reached, when it was made before (same request);
    None when the key is new. A key used for another request is a 409."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT match_id, request_hash, last_version FROM idempotency_keys"
            " WHERE actor = 'system' AND key = %s",
            (found.store_key,),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    if row[0] != found.match_id or row[1] != found.request_hash:
        raise _reused()
    return int(row[2])


__all__ = [
    "REPLAYED_HEADER",
    "IdempotencyKey",
    "MatchKey",
    "create_once",
    "earlier_match",
    "match_key",
    "request_hash",
]
