"""Live play and spectating: after-commit hints over Redis pub/sub, per-viewer
streams over WebSocket and Server-Sent Events (docs/live.md).

Surface: ``LivePlugin`` (mounts everything on the API app), ``Publisher``
(the after-commit hook), ``Hub`` (one Redis subscription per process),
``ViewerStream`` (one viewer's ordered, de-duplicated, redacted stream).
"""

from service.live.hub import Hub
from service.live.plugin import LivePlugin
from service.live.publish import Publisher
from service.live.stream import ViewerStream

__all__ = ["Hub", "LivePlugin", "Publisher", "ViewerStream"]
