"""Tuning of live streams, read from the environment once."""

import os
from dataclasses import dataclass, field


def _float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True, kw_only=True)
class LiveSettings:
    queue_size: int = field(default_factory=lambda: _int("MATCHA_LIVE_QUEUE", 256))
    """Hints a connection may have waiting; a client further behind is told to resume."""
    check_s: float = field(default_factory=lambda: _float("MATCHA_LIVE_CHECK_S", 5.0))
    """How often each watched match is compared with the store while Redis is healthy."""
    check_degraded_s: float = field(default_factory=lambda: _float("MATCHA_LIVE_CHECK_DOWN_S", 1.0))
    """The same while the Redis subscription is down: the store then carries every move."""
    ping_s: float = field(default_factory=lambda: _float("MATCHA_LIVE_PING_S", 15.0))
    """Idle connections get a ping frame this often (keeps proxies from closing them)."""
    send_timeout_s: float = field(
        default_factory=lambda: _float("MATCHA_LIVE_SEND_TIMEOUT_S", 10.0)
    )
    """A client that does not take one frame in this long is disconnected."""
    hello_wait_s: float = field(default_factory=lambda: _float("MATCHA_LIVE_HELLO_WAIT_S", 1.0))
    """How long a WebSocket without a token waits for a first `hello` message."""
    presence_ttl_s: float = field(
        default_factory=lambda: _float("MATCHA_LIVE_PRESENCE_TTL_S", 30.0)
    )
    """A connection not refreshed for this long (its process died) no longer counts."""
    presence_debounce_s: float = field(
        default_factory=lambda: _float("MATCHA_LIVE_PRESENCE_DEBOUNCE_S", 0.25)
    )
    """Presence changes within this window are sent as one frame (a burst of joins)."""
    max_connections: int = field(
        default_factory=lambda: _int("MATCHA_LIVE_MAX_CONNECTIONS", 10_000)
    )
    """Live connections (WebSocket and SSE, matches and lobby) one API process
    holds at most; beyond it a client is told to try again (WebSocket 1013, SSE
    503 with Retry-After), so a flood of idle sockets cannot exhaust the process."""
