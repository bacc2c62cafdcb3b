"""Routes of the web client: the page addresses and ``/static/...``.

Every page returns the same small HTML shell (one header, theme and navigation
for the whole site); ``static/main.js`` reads the address (``/``, ``/play/{id}``,
``/watch/{id}``, ``/replay/{id}?frame=N``, ``/player/{id}``, ``/admin``,
``/admin/matches/{id}``, ``/practice``, ``/tournaments``, ``/tournaments/{id}``,
``/ladders/{id}/seasons``) and draws that page from the JSON API, so the server
keeps no page state. A new page is a handler here,
a module in ``static/`` and one line in ``main.js``'s ``PAGES``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Final

from litestar import MediaType, Request, Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.static_files import create_static_files_router

STATIC_DIR: Final = Path(__file__).parent / "static"

# The assets are small and change with each release: let the browser revalidate
# (ETag / Last-Modified) rather than serve a stale module next to a new one.
_REVALIDATE: Final = CacheControlHeader(no_cache=True)


@cache
def _shell() -> bytes:
    return (STATIC_DIR / "index.html").read_bytes()


def _page() -> Response[bytes]:
    return Response(
        _shell(),
        media_type=MediaType.HTML,
        headers={"Cache-Control": _REVALIDATE.to_header()},
    )


_NOT_PAGES: Final = ("/api/", "/static/", "/schema", "/metrics", "/healthz", "/readyz")
"""Addresses whose 404 stays problem+json whoever asks: the API's and the assets'."""


def not_found_page(request: Request[Any, Any, Any]) -> Response[bytes] | None:
    """A browser's 404 for an address that is no page: the site's own shell (one header
    and navigation; ``static/main.js`` says "No such page"), with status 404. None for
    anything else (an API client, an asset, an API address), which keeps problem+json."""
    path = request.url.path
    if path.startswith(_NOT_PAGES) or request.method not in ("GET", "HEAD"):
        return None
    if request.accept.best_match([MediaType.JSON, MediaType.HTML]) != MediaType.HTML:
        return None
    return Response(
        _shell(),
        status_code=404,
        media_type=MediaType.HTML,
        headers={"Cache-Control": _REVALIDATE.to_header()},
    )


@get("/", include_in_schema=False, sync_to_thread=False)
def lobby_page() -> Response[bytes]:
    """Ladders, leaderboards, live and finished matches, sign-in."""
    return _page()


@get("/play/{match_id:str}", include_in_schema=False, sync_to_thread=False)
def play_page(match_id: str) -> Response[bytes]:
    """A seat's table: hand, targets, pass and keep."""
    return _page()


@get("/watch/{match_id:str}", include_in_schema=False, sync_to_thread=False)
def watch_page(match_id: str) -> Response[bytes]:
    """The same table with public information only, live."""
    return _page()


@get("/replay/{match_id:str}", include_in_schema=False, sync_to_thread=False)
def replay_page(match_id: str) -> Response[bytes]:
    """A finished match, frame by frame (``?frame=N`` links one frame)."""
    return _page()


@get("/tournaments", include_in_schema=False, sync_to_thread=False)
def tournaments_page() -> Response[bytes]:
    """The tournament lobby: every tournament, and (for organisers) the form."""
    return _page()


@get("/tournaments/{tournament_id:str}", include_in_schema=False, sync_to_thread=False)
def tournament_page(tournament_id: str) -> Response[bytes]:
    """One tournament: standings with tie-breaks, each round's pairings, the crosstable."""
    return _page()


@get("/practice", include_in_schema=False, sync_to_thread=False)
def practice_page() -> Response[bytes]:
    """Practice against a bot: a level, a ruleset, a seat; the match opens in /play."""
    return _page()


@get("/player/{player_id:str}", include_in_schema=False, sync_to_thread=False)
def player_page(player_id: str) -> Response[bytes]:
    """A player: ratings per ladder with charts, recent matches, head-to-head."""
    return _page()


@get(["/admin", "/admin/matches/{match_id:str}"], include_in_schema=False, sync_to_thread=False)
def admin_page(match_id: str | None = None) -> Response[bytes]:
    """Administrators: the dispute queue, a match's audit and the decision forms.
    The shell is public; the data behind it is guarded by the API (admins only)."""
    return _page()


static_files = create_static_files_router(
    path="/static",
    directories=[STATIC_DIR],
    cache_control=_REVALIDATE,
    include_in_schema=False,
    name="web-static",
)

ROUTES: Final = [
    Router(
        path="/",
        route_handlers=[
            lobby_page,
            play_page,
            watch_page,
            replay_page,
            player_page,
            admin_page,
            tournaments_page,
            tournament_page,
            practice_page,
            static_files,
        ],
        include_in_schema=False,
        security=[],
    )
]
"""Mounted by ``service.app`` (its ``ROUTES`` plug-in list)."""
