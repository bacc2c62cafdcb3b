"""The HTTP API (Litestar + msgspec): thin route handlers over the match core and
the application parts, one module per resource (``ROUTES`` in each), the
dependencies (``deps``) and the one table of error handlers (``errors``).

An adapter like the live streams and bot play, and a sibling of theirs: none
imports another. ``service.app`` (the composition root) mounts them all in
``create_app(settings)``; docs/api.md lists the routes.
"""
