"""Prometheus metrics of live play (exposed wherever the API serves /metrics).

What the publisher of hints counts is ``service.broker.metrics``."""

from prometheus_client import Counter

# The open-streams gauge belongs to ops (it sums it across processes).
from service.ops.metrics import live_connections as connections

lagging = Counter(
    "matcha_live_lagging_disconnects_total", "Connections closed for falling too far behind."
)
refills = Counter(
    "matcha_live_refills_total", "Reads from the store to fill a gap a hint revealed.", ["why"]
)
recent_hits = Counter(
    "matcha_live_recent_reads_total",
    "Reads a seat's stream took from this process's own latest appends, not the store.",
)
refused_full = Counter(
    "matcha_live_refused_full_total",
    "Live connections refused because the process held MATCHA_LIVE_MAX_CONNECTIONS.",
)
subscription_drops = Counter(
    "matcha_live_subscription_drops_total", "Times the process's Redis subscription was lost."
)

__all__ = [
    "connections",
    "lagging",
    "recent_hits",
    "refills",
    "refused_full",
    "subscription_drops",
]
