"""RQ on a Redis Cluster, for the workers: ``service.broker.rq_cluster`` (where the
API's enqueues find it too; the API never imports the workers) under the name the
workers and their docs have always used."""

from service.broker.rq_cluster import (
    HASH_TAGGED_PREFIX,
    NotOneSlot,
    SlotMasterConnection,
    SlotMasterSSLConnection,
    connection,
    hash_tag,
    require_one_slot,
    rq_key_prefix,
    slot_key,
)

__all__ = [
    "HASH_TAGGED_PREFIX",
    "NotOneSlot",
    "SlotMasterConnection",
    "SlotMasterSSLConnection",
    "connection",
    "hash_tag",
    "require_one_slot",
    "rq_key_prefix",
    "slot_key",
]
