"""Which server each route reads (``service.app.LAGGING_READS``, ``service.store.replica``),
through the real app: the pages that may lag read the standby, and only they do.

The "standby" here is the test's own database through sessions that refuse to
write (``default_transaction_read_only``), trusted as close enough behind: a page
routed there that wrote anything would fail, and a command routed there could not
append. The real standby's lag rules are ``test_replica.py``'s (make cluster-test)."""

from __future__ import annotations

import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "live"))

from live_harness import Driver, serve_in_process, settings_for

from service import app as app_module
from service.store import replica

pytestmark = pytest.mark.anyio


def _read_only(url: str) -> str:
    options = quote("-c default_transaction_read_only=on")
    return f"{url}{'&' if '?' in url else '?'}options={options}"


@pytest.fixture
async def served(
    database_url: str, redis_server_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[httpx.AsyncClient, list[replica.ReadRouting]]]:
    monkeypatch.setenv("MATCHA_STANDBY_DATABASE_URL", _read_only(database_url))
    monkeypatch.setattr(replica.ReadRouting, "standby_usable", lambda self: True)
    routings: list[replica.ReadRouting] = []
    opened = replica.open_read_routing

    async def keep(*args: object, **kwargs: object) -> replica.ReadRouting:
        routing = await opened(*args, **kwargs)  # type: ignore[arg-type]
        routings.append(routing)
        return routing

    monkeypatch.setattr(app_module, "open_read_routing", keep)
    settings = settings_for(database_url, redis_server_url, redis_prefix)
    async with (
        serve_in_process(settings) as server,
        httpx.AsyncClient(base_url=f"http://{server}", timeout=30) as client,
    ):
        yield client, routings


def _lagging_pages(ladder: str, a: str, b: str) -> list[str]:
    return [
        "/api/matches",
        "/api/ladders",
        f"/api/ladders/{ladder}",
        f"/api/ladders/{ladder}/members",
        f"/api/ladders/{ladder}/leaderboard",
        f"/api/ladders/{ladder}/players/{a}/ratings",
        f"/api/ladders/{ladder}/expected?a={a}&b={b}",
        f"/api/ladders/{ladder}/standings.csv",
        f"/api/players?ids={a},{b}",
        f"/api/players/{a}",
        f"/api/players/{a}/head-to-head",
        "/api/tournaments",
    ]


async def test_given_a_standby_then_every_page_that_may_lag_reads_it_and_no_command_does(
    served: tuple[httpx.AsyncClient, list[replica.ReadRouting]],
) -> None:
    client, routings = served
    (routing,) = routings
    driver = Driver(client)
    ladder, match_id, a, b = await driver.new_ladder_match()

    # Commands (the ladder, the pairing, every move) and a seat's own view: the
    # primary alone. Each would fail on a session that refuses to write.
    before = routing.reads["standby"]
    await driver.play_out(match_id, (a, b), random.Random(30))
    await driver.view(match_id, a)
    assert routing.reads["standby"] == before

    for path in _lagging_pages(ladder, a.id, b.id):
        reads = routing.reads["standby"]
        response = await client.get(path)
        assert response.status_code == 200, (path, response.text)
        assert routing.reads["standby"] > reads, f"{path} did not read the standby"
    # A replay: the archive the worker stored is read on the standby; one not stored
    # yet is built and stored on the primary (a write the standby would refuse).
    for path in (f"/api/matches/{match_id}/replay", f"/api/matches/{match_id}/replay/frames/1"):
        reads = routing.reads["standby"]
        response = await client.get(path)
        assert response.status_code == 200, (path, response.text)
        assert routing.reads["standby"] > reads, f"{path} did not read the standby"
    # the pages read what the commands wrote (here the same database: no lag)
    listed = (await client.get("/api/matches", params={"ladder": ladder})).json()
    assert [m["match_id"] for m in listed] == [match_id]


def test_given_the_lagging_reads_then_each_is_a_get_and_a_route_that_writes_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert all(set(h.http_methods) == {"GET"} for h in app_module.LAGGING_READS)
    from service.api import ladders

    monkeypatch.setattr(app_module, "LAGGING_READS", [ladders.join_ladder])
    with pytest.raises(RuntimeError, match="only a GET may lag"):
        app_module.create_app()
