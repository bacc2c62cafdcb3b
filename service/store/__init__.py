"""The event store: append-only, hash-chained PostgreSQL streams.

Public surface: ``EventStore`` (append, load, version, load_seed, read_all),
``open_pool``, ``apply_migrations``, ``verify_chain`` / ``check_match_chain``;
``stream.Stream`` (the generic stream every aggregate's log is), ``ops``
(``run`` / ``run_async``: one operation on a blocking or an async connection),
``matchlog`` (the one reader of the match log). See docs/event-store.md.
"""

from service.store.chain import ChainBreak, check_match_chain, verify_chain
from service.store.db import open_pool
from service.store.events import AppendResult, EventStore, StoredEvent
from service.store.migrate import apply_migrations

__all__ = [
    "AppendResult",
    "ChainBreak",
    "EventStore",
    "StoredEvent",
    "apply_migrations",
    "check_match_chain",
    "open_pool",
    "verify_chain",
]
