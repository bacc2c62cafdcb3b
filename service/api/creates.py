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
* Matches (``match_create_key``): a match is created by appending its first
  events, and the event store keeps an append's key with its events; the match
  core answers a resend (even one racing the first) with the match the first
  made (``MatchCore.start``).
"""

from __future__ import annotations

import hashlib
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


def match_create_key(actor: str, key: str) -> str:
    """The key of a keyed match creation as the match core stores it (with the first
    events, ``MatchCore.start``). The creating events' actor is ``system``, so the
    caller who asked is part of the key: two organisers' keys never meet."""
    return f"create-match:{actor}:{key}"


__all__ = [
    "REPLAYED_HEADER",
    "IdempotencyKey",
    "create_once",
    "match_create_key",
    "request_hash",
]
