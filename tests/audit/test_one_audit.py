"""One audit, one verdict: ``matcha audit``, ``GET /api/admin/matches/{id}/audit``
and the web audit page say the same of every forgery (issue 23).

Each forgery kind of the audit tests is made to a match of its own, signed by the
service as the API signs, with a checkpoint signed before the forgery. Then the
three readers are asked, as people use them: the console as an operator runs it
on ``make run``'s data folder (``--data-dir``: no key named, it finds the keys and
checkpoints there), the API as an admin, and the page in a real Chromium. Each
must give the same verdict, the same list of checks with the same statuses and
the same first problem, and the page must show every check with that problem.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from audit_forgery import Forger, append_batches
from audit_matches import Batch, play

from schemas.events import MatchAnnulled, Passed, encode_event
from schemas.rules import STANDARD
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings
from service.store.chain import row_hash
from service.store.events import EventStore, event_type

pytestmark = [pytest.mark.anyio, pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path(os.environ.get("MATCHA_CHROMIUM", "/usr/bin/chromium"))
ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "one-audit-admin-" + "z" * 24

Forgery = Callable[[Forger, list[Batch]], Awaitable[None]]


def _finished(n: int, match_id: str) -> tuple[str, list[Batch]]:
    for i in range(n, n + 500):
        seed, batches = play(random.Random(i), match_id=match_id, ruleset=STANDARD)
        kinds = [type(e).__name__ for _, es in batches for e in es]
        if kinds[-1] == "MatchEnded" and kinds.count("HandDealt") >= 2 and "CardPlayed" in kinds:
            return seed, batches
    raise AssertionError("no seeded match has the wanted shape")


async def _first(forger: Forger, kind: str) -> dict[str, Any]:
    return next(r for r in await forger.rows() if r["type"] == kind)


async def honest(forger: Forger, batches: list[Batch]) -> None:
    del forger, batches


async def changed_deal_card(forger: Forger, batches: list[Batch]) -> None:
    rows = await forger.rows()
    deal = [r for r in rows if r["type"] == "hand_dealt"][1]
    data = deal["data"]
    hands = data["hands"]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    await forger.set_data(deal["version"], data)
    await forger.rechain()


async def changed_move(forger: Forger, batches: list[Batch]) -> None:
    played = await _first(forger, "card_played")
    data = {
        **played["data"],
        "target": "suit" if played["data"]["target"] == "number" else "number",
    }
    await forger.set_data(played["version"], data)
    await forger.rechain()


async def move_by_the_other_player(forger: Forger, batches: list[Batch]) -> None:
    played = await _first(forger, "card_played")
    rows = await forger.rows()
    other = next(r["actor"] for r in rows if r["actor"] not in (played["actor"], "system"))
    await forger.execute(
        "UPDATE events SET actor = %s WHERE match_id = %s AND version = %s",
        (other, forger.match_id, played["version"]),
    )
    await forger.rechain()


async def deleted_event(forger: Forger, batches: list[Batch]) -> None:
    played = await _first(forger, "card_played")
    v = played["version"]
    await forger.delete(v, close_gap=True)
    await forger.rechain()


async def wrong_seed_revealed(forger: Forger, batches: list[Batch]) -> None:
    ended = await _first(forger, "match_ended")
    await forger.set_data(ended["version"], {**ended["data"], "seed": "0" * 64})
    await forger.rechain()


async def seat_flipped(forger: Forger, batches: list[Batch]) -> None:
    created = await _first(forger, "match_created")
    data = created["data"]
    data["players"] = list(reversed(data["players"]))
    await forger.set_data(created["version"], data)
    await forger.rechain()


async def inserted_after_the_end(forger: Forger, batches: list[Batch]) -> None:
    rows = await forger.rows()
    actor = next(r["actor"] for r in rows if r["type"] == "card_played")
    await forger.insert(rows[-1]["version"] + 1, Passed(seat=0, hand=1, round=1), actor)
    await forger.rechain()


async def unsigned_annulment(forger: Forger, batches: list[Batch]) -> None:
    """What a leaked DATABASE_URL allows: a row at the end, its hash correctly chained."""
    rows = await forger.rows()
    async with await forger._conn() as conn:
        cur = await conn.execute(
            "SELECT hash, recorded_at FROM events WHERE match_id = %s"
            " ORDER BY version DESC LIMIT 1",
            (forger.match_id,),
        )
        prev, at = (await cur.fetchone()) or (b"", None)
    event = MatchAnnulled(admin="mallory", reason="collusion")
    raw = encode_event(event)
    version = rows[-1]["version"] + 1
    h = row_hash(
        bytes(prev), match_id=forger.match_id, version=version, actor="mallory",
        recorded_at=at, event_bytes=raw,
    )  # fmt: skip
    await forger.execute(
        "INSERT INTO events (match_id, version, type, data, actor, recorded_at, prev_hash, hash)"
        " VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s)",
        (forger.match_id, version, event_type(event), raw.decode(), "mallory", at, bytes(prev), h),
    )


async def cut_before_the_end(forger: Forger, batches: list[Batch]) -> None:
    """The log cut back to a player's turn; the signed checkpoint shows it was longer."""
    cut = sum(len(es) for _, es in batches[:-1]) + 1
    await forger.execute(
        "DELETE FROM events WHERE match_id = %s AND version >= %s", (forger.match_id, cut)
    )


FORGERIES: dict[str, Forgery] = {
    "honest": honest,
    "a changed deal card": changed_deal_card,
    "a changed move": changed_move,
    "a move recorded as the other player's": move_by_the_other_player,
    "a deleted event, versions closed up": deleted_event,
    "a wrong seed revealed": wrong_seed_revealed,
    "the seats swapped": seat_flipped,
    "a move inserted after the end, rechained": inserted_after_the_end,
    "an annulment with a valid chain hash but no signature": unsigned_annulment,
    "the log cut back before its end": cut_before_the_end,
}


def _cli(database_url: str, data_dir: Path, match_id: str) -> dict[str, Any]:
    """``matcha audit --json`` as an operator runs it on the data folder: no key named."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MATCHA_") or k.startswith("MATCHA_TEST_")
    }
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "audit", "--json", "--no-log", match_id,
         "--database-url", database_url, "--data-dir", str(data_dir)],
        capture_output=True, text=True, env=env, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert (done.returncode == 0) is report["verdict"]["consistent"], "exit status = verdict"
    return report


def _pages(base: str, match_ids: list[str], admin_id: str) -> dict[str, dict[str, Any]]:
    """What the audit page shows of each match, read from a real Chromium."""
    from playwright.sync_api import sync_playwright

    shown: dict[str, dict[str, Any]] = {}
    me = json.dumps({"id": admin_id, "name": "admin", "roles": ["admin"]})
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            ctx = browser.new_context()
            ctx.add_init_script(
                f"localStorage.setItem('matcha.token', {json.dumps(ADMIN_TOKEN)});"
                f" localStorage.setItem('matcha.me', {json.dumps(me)});"
            )
            page = ctx.new_page()
            for match_id in match_ids:
                page.goto(f"{base}/admin/matches/{match_id}")
                page.wait_for_selector("#verdict", timeout=30_000)
                shown[match_id] = page.evaluate(
                    """() => ({
                      verdict: document.querySelector('#verdict').innerText,
                      checks: [...document.querySelectorAll('#checks .check')].map((c) => ({
                        title: c.dataset.check,
                        status: c.className.replace('check', '').trim(),
                        state: c.querySelector('.state').innerText,
                        finding: c.querySelector('.finding')?.innerText ?? null,
                      })),
                    })"""
                )
        finally:
            browser.close()
    return shown


def _same(report: dict[str, Any]) -> dict[str, Any]:
    """What must agree between readers: the verdict and every check (not the time)."""
    return {"verdict": report["verdict"], "checks": report["checks"], "status": report["status"]}


async def test_every_forgery_gets_one_verdict_from_the_cli_the_api_and_the_web_page(
    keys: Any,
    signed_store: EventStore,
    checkpoint: Callable[[], Awaitable[Any]],
    admin_database_url: str,
    database_url: str,
    redis_server_url: str,
    redis_prefix: str,
) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from harness import serve_in_process

    matches: dict[str, tuple[str, list[Batch]]] = {}
    for n, name in enumerate(FORGERIES):
        match_id = f"forged-{n}"
        seed, batches = _finished(10 * n, match_id)
        await append_batches(signed_store, match_id, seed, batches)
        matches[name] = (match_id, batches)
    assert await checkpoint() is not None
    for name, forge in FORGERIES.items():
        match_id, batches = matches[name]
        await forge(Forger(admin_database_url, match_id), batches)

    settings = Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False),
        redis=RedisSettings(url=redis_server_url, prefix=redis_prefix),
        api=ApiSettings(admin_token=ADMIN_TOKEN, admin_name="admin"),
    )
    async with serve_in_process(settings) as host:
        base = f"http://{host}"
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
            admin_id = (await client.get("/api/me", headers=auth)).json()["id"]
            by_api = {}
            for name, (match_id, _) in matches.items():
                answer = await client.get(f"/api/admin/matches/{match_id}/audit", headers=auth)
                assert answer.status_code == 200, answer.text
                by_api[name] = answer.json()
        ids = [match_id for match_id, _ in matches.values()]
        pages = await anyio.to_thread.run_sync(_pages, base, ids, admin_id)

    verdicts = {}
    for name, (match_id, _) in matches.items():
        api = by_api[name]
        cli = await anyio.to_thread.run_sync(_cli, database_url, keys.folder, match_id)
        assert _same(cli) == _same(api), name
        names = [c["name"] for c in api["checks"]]
        assert names == ["chain", "refold", "fairness", "admin", "signatures", "evidence"], name
        page = pages[match_id]
        assert page["verdict"].startswith(
            "Consistent" if api["verdict"]["consistent"] else "Inconsistent"
        )
        for reason in api["verdict"]["reasons"]:
            assert reason in page["verdict"], (name, reason)
        assert [c["title"] for c in page["checks"]] == [c["title"] for c in api["checks"]], name
        for shown, check in zip(page["checks"], api["checks"], strict=True):
            assert shown["status"] == check["status"], (name, check["title"])
            problem = check.get("first_problem")
            if check["status"] == "inconsistent" and problem is not None:
                assert shown["finding"] is not None, (name, check["title"])
                assert problem["problem"] in shown["finding"], (name, check["title"])
                if problem.get("version") is not None:
                    assert f"event {problem['version']}" in shown["finding"], (name, check["title"])
        verdicts[name] = api["verdict"]["consistent"]
    assert verdicts == {name: name == "honest" for name in FORGERIES}, verdicts
    unsigned = by_api["an annulment with a valid chain hash but no signature"]
    assert unsigned["signatures"]["status"] == "inconsistent"
    cut = by_api["the log cut back before its end"]
    assert (
        cut["evidence"]["status"] == "inconsistent"
        and "removed" in cut["evidence"]["first_problem"]["problem"]
    )
