"""Event frames for one viewer, through ``service.engine.redact`` only.

All spectators of a match see the same bytes, so a frame is built once per
(event, viewer, match over?, hide hands?) and shared: 1,000 spectators cost
one redaction and one encoding per event.
"""

from __future__ import annotations

from schemas.views import LogEntry, Viewer
from service.engine import redact
from service.evidence.receipts import receipt_of
from service.live.stream import Outbound, Render, Shown
from service.live.wire import EventFrame, frame_encoder

CACHE_SIZE = 20_000


def render_frame(
    event: Shown,
    viewer: Viewer,
    match_over: bool,
    hide_hands_in_replay: bool,
    salt: bytes | None = None,
) -> str:
    """One event's frame for ``viewer``. ``event.event`` is the whole event (from the
    store) or its public redaction (from a hint, for a spectator): redacting that
    again gives it back unchanged, so both make the same frame."""
    entry = LogEntry(
        version=event.version,
        event=redact(
            event.event,  # type: ignore[arg-type]  # an EventView passes through unchanged
            viewer,
            match_over=match_over,
            hide_hands_in_replay=hide_hands_in_replay,
        ),
        recorded_at=event.recorded_at,
        actor=getattr(event, "actor", None),
        position=getattr(event, "position", None),
    )
    # A seat holds the service's signature of each head it is shown (a stored row
    # signed at its append); a spectator's frames are shared bytes and carry none.
    signed = viewer in (0, 1) and salt is not None and hasattr(event, "signature")
    receipt = receipt_of(event, salt) if signed else None  # type: ignore[arg-type]
    return frame_encoder.encode(
        EventFrame(version=event.version, entry=entry, receipt=receipt)
    ).decode()


class FrameCache:
    """Encoded frames, keyed by everything a frame depends on.

    The cached value is the ``Frame`` itself: a hit allocates nothing, so 1,000
    spectators share one object (and one string) per event.

    Evicted oldest-first (not least-recently-used): a frame is wanted while its
    event is new, and a hit then costs one dict lookup, 1,000 times per event.
    """

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._frames: dict[tuple[str, int, Viewer, bool, bool], Outbound] = {}
        self.hits = 0
        self.misses = 0

    def renderer(self, hide_hands_in_replay: bool, salt: bytes | None = None) -> Render:
        """``salt``: the match's head salt, for a seat's receipts (None: no receipts)."""
        frames = self._frames

        def render(match_id: str, event: Shown, viewer: Viewer, match_over: bool) -> Outbound:
            key = (match_id, event.version, viewer, match_over, hide_hands_in_replay)
            frame = frames.get(key)
            if frame is not None:
                self.hits += 1
                return frame
            self.misses += 1
            frame = Outbound(
                data=render_frame(event, viewer, match_over, hide_hands_in_replay, salt),
                version=event.version,
            )
            frames[key] = frame
            if len(frames) > self._size:
                del frames[next(iter(frames))]
            return frame

        return render
