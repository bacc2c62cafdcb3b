"""Through the real API: every command is counted by kind and outcome, appends and races too."""

from __future__ import annotations

import random
from collections.abc import Iterator

import psycopg
import pytest
from harness import Api, play_out
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from service.matches import MatchCore
from service.matches.disputes import file_dispute
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings
from service.store.db import scratch_database, with_database

from .ops_harness import LogLines

ADMIN_TOKEN = "ops-admin-token-" + "z" * 24


def _values(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _get(values: dict, name: str, **labels: str) -> float:
    return float(values.get((name, frozenset(labels.items())), 0.0))


@pytest.fixture
def fresh_database(pg_server_url: str) -> Iterator[str]:
    with scratch_database(pg_server_url, "ops_") as name:
        yield with_database(pg_server_url, name)


@pytest.mark.anyio
async def test_a_whole_match_is_counted_by_command_and_outcome(
    fresh_database: str, redis_server_url: str, redis_prefix: str, json_logs: LogLines
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=fresh_database, migrate_on_start=True),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN),
    )
    app = create_app(settings)
    async with AsyncTestClient(app, timeout=30) as client:
        api = Api(client, ADMIN_TOKEN)
        _, match_id, a, b = await api.new_ladder_match()
        start_version = (await api.view(match_id, a))["version"]
        before = _values((await client.get("/metrics")).text)
        sent: dict[str, int] = {}
        final = await play_out(api, match_id, (a, b), random.Random(7), sent=sent)
        # a stale command: refused, counted under its outcome
        stale = await client.post(
            f"/api/matches/{match_id}/pass", json={"expected_version": 1}, headers=a.auth
        )
        assert stale.status_code in (409, 422), stale.text
        stale_code = stale.json()["code"]
        # a race lost at the store: another process's core files a dispute first,
        # so this core's append (decided on its cached fold) conflicts, and the
        # dispute is decided again on the latest fold and appended
        core = app.state.matches
        await core.current(match_id)
        await file_dispute(MatchCore(app.state.store), match_id, a.id, "The first dispute.")
        await file_dispute(core, match_id, b.id, "The second dispute.")
        after = _values((await client.get("/metrics")).text)

    def grew(name: str, **labels: str) -> float:
        return _get(after, name, **labels) - _get(before, name, **labels)

    assert sent, "the bots sent commands"
    for route, count in sent.items():
        assert grew("matcha_commands_total", kind=route, outcome="ok") == count, route
        assert grew("matcha_command_seconds_count", kind=route) >= count, route
    assert grew("matcha_commands_total", kind="pass", outcome=stale_code) == 1
    with psycopg.connect(fresh_database) as conn:
        row = conn.execute(
            "SELECT count(*) FROM events WHERE match_id = %s AND version > %s",
            (match_id, start_version),
        ).fetchone()
    assert row is not None and row[0] == final["version"] - start_version + 2
    # every event but the other process's dispute was appended by this process
    assert grew("matcha_events_appended_total") == row[0] - 1
    assert grew("matcha_version_conflicts_total") == 1

    # every access line of a command names its match and the player who sent it
    commands = [
        line
        for line in json_logs.all()
        if line["logger"] == "matcha.access"
        and line["method"] == "POST"
        and line["path"].startswith(f"/api/matches/{match_id}/")
    ]
    assert len(commands) == sum(sent.values()) + 1
    assert {line["match_id"] for line in commands} == {match_id}
    assert {line["player"] for line in commands} <= {a.name, b.name}
    assert all(len(line["request_id"]) == 32 for line in commands)
