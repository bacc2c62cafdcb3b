"""The checkpoint log's copy in an object store (deploy/: S3 with Object Lock).

Each checkpoint line becomes one object ``<prefix><position:016d>-<root[:16]>.json``,
written with ``If-None-Match: *``: objects are never overwritten, and two
processes that sign the same position race harmlessly (the second is told the
object exists). With the bucket's default Object Lock retention in compliance
mode, nobody, the service's own role included, can delete or change an object
before it expires. boto3 is imported only when a bucket is configured
(``pip install boto3``; the deploy image installs it).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from anyio import to_thread

from service.evidence.checkpoints import CheckpointLogEntry
from service.evidence.config import EvidenceSettings

log = logging.getLogger("matcha.evidence.sink")

_encoder = msgspec.json.Encoder()


class ObjectStoreSink:
    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix

    def key(self, entry: CheckpointLogEntry) -> str:
        c = entry.checkpoint
        return f"{self.prefix}{c.position:016d}-{c.root[:16]}.json"

    def put_now(self, entry: CheckpointLogEntry) -> bool:
        """Write one checkpoint object; False when it already exists."""
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=self.key(entry),
                Body=_encoder.encode(entry),
                ContentType="application/json",
                IfNoneMatch="*",
            )
        except Exception as exc:  # botocore's ClientError, without importing botocore here
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise
        return True

    async def put(self, entry: CheckpointLogEntry) -> None:
        try:
            await to_thread.run_sync(self.put_now, entry)
        except Exception:  # the file holds it; the next checkpoint covers this one
            log.exception(
                "could not copy checkpoint %s to s3://%s", entry.checkpoint.sequence, self.bucket
            )


def sink_from_settings(settings: EvidenceSettings) -> ObjectStoreSink | None:
    if not settings.checkpoint_bucket:
        return None
    try:
        # Optional (the ``s3`` extra): imported only where a bucket is configured.
        import boto3  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        log.error("MATCHA_CHECKPOINT_BUCKET is set but boto3 is not installed: no copies")
        return None
    return ObjectStoreSink(
        boto3.client("s3"), settings.checkpoint_bucket, settings.checkpoint_prefix
    )
