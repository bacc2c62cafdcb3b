"""Live play and spectating: per-viewer streams over WebSocket and Server-Sent
Events, made from the after-commit hints every process publishes over Redis
(``service.broker``: the hints and their publisher). docs/live.md.

Surface: ``LivePlugin`` (mounts everything on the API app), ``Hub`` (one Redis
subscription per process), ``ViewerStream`` (one viewer's ordered,
de-duplicated, redacted stream).
"""

from service.live.hub import Hub
from service.live.plugin import LivePlugin
from service.live.stream import ViewerStream

__all__ = ["Hub", "LivePlugin", "ViewerStream"]
