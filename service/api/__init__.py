"""The HTTP API (Litestar + msgspec): ``create_app(settings) -> Litestar``.

See ``service.api.app`` for how other parts mount routes and hooks, and
docs/api.md for the routes.
"""
