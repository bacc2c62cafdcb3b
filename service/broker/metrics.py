"""Prometheus metrics of the hints published after a commit (exposed wherever the
API serves /metrics). The names keep their ``matcha_live_`` prefix: dashboards
read them so."""

from prometheus_client import Counter

publish_failures = Counter(
    "matcha_live_publish_failures_total",
    "Hints not published after a commit (Redis down or slow); viewers refill from the store.",
    ["channel"],
)
published = Counter("matcha_live_published_total", "Hints published after a commit.", ["channel"])

__all__ = ["publish_failures", "published"]
