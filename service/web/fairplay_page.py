"""The admins' fair-play page, ``/admin/flags``: a shell (``static/flags.html``)
whose module ``static/flags.js`` lists the open flags by weight with a decision
form, all from the JSON API (which alone guards the data: the shell is public,
like every page's). docs/fairplay.md."""

from __future__ import annotations

from functools import cache
from typing import Final

from litestar import MediaType, Response, Router, get
from litestar.datastructures import CacheControlHeader

from service.web.routes import STATIC_DIR

_REVALIDATE: Final = CacheControlHeader(no_cache=True)


@cache
def _shell() -> bytes:
    return (STATIC_DIR / "flags.html").read_bytes()


@get("/admin/flags", include_in_schema=False, sync_to_thread=False)
def flags_page() -> Response[bytes]:
    """Open fair-play flags, heaviest first, each with its decision form."""
    return Response(
        _shell(), media_type=MediaType.HTML, headers={"Cache-Control": _REVALIDATE.to_header()}
    )


ROUTES: Final = [
    Router(path="/", route_handlers=[flags_page], include_in_schema=False, security=[])
]
