"""Every Redis name the service publishes on or keys by, all under
``settings.redis.prefix``.

Live play: one pattern subscription per process (``pattern``) covers every
match channel and the lobby, so a process never issues SUBSCRIBE per viewer.
The workers: ``projections_channel`` wakes the projection runners,
``clocks_channel`` the clock sweepers. (The RQ queues' names: ``jobs.queue_name``.)
"""


def match_channel(prefix: str, match_id: str) -> str:
    return f"{prefix}:live:match:{match_id}"


def lobby_channel(prefix: str) -> str:
    return f"{prefix}:live:lobby"


def pattern(prefix: str) -> str:
    return f"{prefix}:live:*"


def presence_key(prefix: str, match_id: str) -> str:
    """A sorted set: member ``<connection id>|<role>``, score = when it expires (epoch s)."""
    return f"{prefix}:presence:{match_id}"


def match_id_of(prefix: str, channel: str) -> str | None:
    head = f"{prefix}:live:match:"
    return channel[len(head) :] if channel.startswith(head) else None


def projections_channel(prefix: str) -> str:
    """A match id: something after its play committed (its end, a dispute, an annulment)."""
    return f"{prefix}:projections"


def clocks_channel(prefix: str) -> str:
    """A match id: a timed match committed (its next deadline may be earlier)."""
    return f"{prefix}:clocks"
