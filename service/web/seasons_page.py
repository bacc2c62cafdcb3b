"""The season archive page of a ladder, ``/ladders/{id}/seasons``: the site's one
shell (``static/index.html``), where ``static/main.js`` loads ``static/seasons.js``
to draw the ladder's seasons, each season's standings and a player's ratings in a
season from the JSON API. Mounted by ``service.app`` (its ``ROUTES`` list)."""

from __future__ import annotations

from functools import cache
from typing import Final

from litestar import MediaType, Response, Router, get
from litestar.datastructures import CacheControlHeader

from service.web.routes import STATIC_DIR

_REVALIDATE: Final = CacheControlHeader(no_cache=True)


@cache
def _shell() -> bytes:
    return (STATIC_DIR / "index.html").read_bytes()


@get("/ladders/{ladder_id:str}/seasons", include_in_schema=False, sync_to_thread=False)
def seasons_page(ladder_id: str) -> Response[bytes]:
    """A ladder's seasons: the running one live, the ended ones as frozen."""
    return Response(
        _shell(), media_type=MediaType.HTML, headers={"Cache-Control": _REVALIDATE.to_header()}
    )


ROUTES: Final = [
    Router(path="/", route_handlers=[seasons_page], include_in_schema=False, security=[])
]
