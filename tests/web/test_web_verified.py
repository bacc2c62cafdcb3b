"""The web client checks the evidence itself (service/web/static/verified.js): each
receipt a seat's page receives is checked as it arrives against the service's keys,
pinned at first sight; the end screen and the replay say "verified in your browser"
after checking the whole record there, and say why not when the service serves a
record that was tampered with. Whole matches through the real API, in Chromium."""

from __future__ import annotations

import json
import time
from typing import Any

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from web_pages import sign_in_as, version, wait_version
from web_server import Api

from service.evidence.keys import SigningKey

pytestmark = pytest.mark.browser


def _play_a_card(api: Api, match_id: str, players: list[dict[str, str]]) -> int:
    seen = api.call("GET", f"/api/matches/{match_id}", players[0]["token"])
    assert isinstance(seen, dict)
    seat = int(seen["to_move"])
    view = api.call("GET", f"/api/matches/{match_id}", players[seat]["token"])
    assert isinstance(view, dict)
    play = next(m for m in view["legal_moves"] if m["type"] == "play_card")
    api.call(
        "POST",
        f"/api/matches/{match_id}/play",
        players[seat]["token"],
        json={"card": play["card"], "target": play["target"]},
    )
    return seat


def _verdict(page: Any) -> str:
    page.wait_for_selector("#verified:not([data-verdict='pending'])", timeout=15_000)
    return str(page.get_attribute("#verified", "data-verdict"))


def test_a_player_sees_her_finished_match_verified_in_her_browser(
    browser: Any, api: Api, app_url: str
) -> None:
    # Given Alice's page open on her match while moves are made
    _, match_id, players = api.alice_and_bob("Verified", "duel")
    alice = players[0]
    ctx = browser.new_context()
    sign_in_as(ctx, alice["token"], alice["id"], "alice")
    page = ctx.new_page()
    page.goto(f"{app_url}/play/{match_id}")
    page.wait_for_selector("#live-state")
    before = version(page)
    seat = _play_a_card(api, match_id, players)
    wait_version(page, before + 1)
    # When the other seat resigns
    api.call("POST", f"/api/matches/{match_id}/resign", players[1 - seat]["token"], json={})
    page.wait_for_selector("#end", timeout=15_000)
    # Then her end screen says the record was verified in her browser...
    assert _verdict(page) == "ok", page.inner_text("#verified")
    told = page.inner_text("#verified")
    assert "Verified in your browser" in told
    assert "deals re-dealt" in told
    # ...with the service's keys pinned at first sight, and the receipts she kept
    pinned = json.loads(page.evaluate("localStorage.getItem('matcha.pinned-keys')"))
    keys = api.call("GET", "/api/keys")
    assert isinstance(keys, dict)
    assert set(pinned[app_url]) == {k["key_id"] for k in keys["keys"]}
    kept = json.loads(page.evaluate(f"localStorage.getItem('matcha.receipts.{match_id}')"))
    assert kept, "a seat's page keeps the receipts it receives"
    assert "receipts kept by this browser checked" in told
    # And the replay says the same, for anyone
    replay = browser.new_context().new_page()
    replay.goto(f"{app_url}/replay/{match_id}")
    assert _verdict(replay) == "ok", replay.inner_text("#verified")
    replay.context.close()
    ctx.close()


def test_a_tampered_record_is_refused_in_the_browser_with_its_reason(
    browser: Any, api: Api, app_url: str
) -> None:
    # Given a finished match whose record the service (here: a proxy) serves changed
    _, match_id, players = api.alice_and_bob("Tampered", "duel")
    seat = _play_a_card(api, match_id, players)
    api.call("POST", f"/api/matches/{match_id}/resign", players[1 - seat]["token"], json={})
    page = browser.new_context().new_page()

    def tamper(route: Any) -> None:
        record = route.fetch().json()
        played = next(e for e in record["events"] if e["event"]["type"] == "card_played")
        played["event"]["target"] = "suit" if played["event"]["target"] == "number" else "number"
        route.fulfill(status=200, content_type="application/json", body=json.dumps(record))

    page.route(f"**/api/matches/{match_id}/record", tamper)
    # When the replay is opened, then the browser's own check refuses it and says why
    page.goto(f"{app_url}/replay/{match_id}")
    assert _verdict(page) == "fail"
    assert page.get_attribute("#verified li", "data-code") == "hash_mismatch"
    assert "Not verified in your browser" in page.inner_text("#verified")
    page.context.close()


def test_a_receipt_signed_by_a_key_the_browser_never_saw_is_flagged_as_it_arrives(
    browser: Any, api: Api, app_url: str
) -> None:
    # Given Bob's browser that pinned other keys than the ones the service signs with
    _, match_id, players = api.alice_and_bob("Stranger keys", "duel")
    bob = players[1]
    ctx = browser.new_context()
    sign_in_as(ctx, bob["token"], bob["id"], "bob")
    page = ctx.new_page()
    stranger = SigningKey(Ed25519PrivateKey.from_private_bytes(bytes(32)))
    other = {"format": "matcha-keyring/1", "keys": [msgspec.to_builtins(stranger.public())]}
    page.route(
        "**/api/keys",
        lambda route: route.fulfill(
            status=200, content_type="application/json", body=json.dumps(other)
        ),
    )
    page.goto(f"{app_url}/play/{match_id}")
    page.wait_for_selector("#live-state")
    before = version(page)
    # When a move is made and its receipt reaches his page
    _play_a_card(api, match_id, players)
    wait_version(page, before + 1)
    # Then he is told that the service's receipt does not verify in his browser
    page.wait_for_selector("#toast.error", timeout=10_000)
    assert "does not verify in your browser" in page.inner_text("#toast")
    ctx.close()


def _finished_and_checkpointed(api: Api, ladder_name: str) -> tuple[str, dict[str, Any]]:
    """A duel played to its end (one card, then a resignation) and the checkpoint
    that first covers its end (the checkpointer signs one within seconds)."""
    players = [api.register(f"{ladder_name} {n}".replace(" ", "-").lower()) for n in (0, 1)]
    ladder = api.ladder(ladder_name, "duel")
    match_id = api.start_match(ladder, [p["token"] for p in players], [p["id"] for p in players])
    seat = _play_a_card(api, match_id, players)
    api.call("POST", f"/api/matches/{match_id}/resign", players[1 - seat]["token"], json={})
    final = len(api.call("GET", f"/api/matches/{match_id}/events", players[0]["token"]))  # type: ignore[arg-type]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = api.http.get(f"/api/matches/{match_id}/checkpoint")
        if answer.status_code == 200 and answer.json()["leaf"][1] == final:
            return match_id, answer.json()["checkpoint"]
        time.sleep(0.2)  # polling a bounded wait: the checkpointer has no event to wait on
    raise AssertionError("the match end was never checkpointed")


def test_each_new_checkpoint_must_extend_the_one_this_browser_saw_before(
    browser: Any, api: Api, app_url: str
) -> None:
    # Given a browser that saw the checkpoint covering a first match
    first_match, seen = _finished_and_checkpointed(api, "Seen first")
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{app_url}/replay/{first_match}")
    assert _verdict(page) == "ok", page.inner_text("#verified")
    kept = json.loads(page.evaluate("localStorage.getItem('matcha.seen-checkpoint')"))
    assert kept[app_url]["sequence"] >= seen["sequence"]
    # When a later match's record carries a later checkpoint
    second_match, later = _finished_and_checkpointed(api, "Seen second")
    assert later["sequence"] > kept[app_url]["sequence"]
    page.goto(f"{app_url}/replay/{second_match}")
    # Then the browser checked the consistency proof between them, and keeps the later
    assert _verdict(page) == "ok", page.inner_text("#verified")
    assert f"extends checkpoint {kept[app_url]['sequence']}" in page.inner_text("#verified")
    now = json.loads(page.evaluate("localStorage.getItem('matcha.seen-checkpoint')"))
    assert now[app_url]["sequence"] > kept[app_url]["sequence"]
    ctx.close()

    # And a browser that saw the first checkpoint, shown a proof that does not hold
    # (a service that rewrote its log between them), says so.
    ctx = browser.new_context()
    ctx.add_init_script(
        f"localStorage.setItem('matcha.seen-checkpoint', {json.dumps(json.dumps(kept))});"
    )
    page = ctx.new_page()

    def broken(route: Any) -> None:
        proof = route.fetch().json()
        proof["path"] = ["00" * 32 for _ in proof["path"]] or ["00" * 32]
        route.fulfill(status=200, content_type="application/json", body=json.dumps(proof))

    page.route("**/api/checkpoints/consistency*", broken)
    page.goto(f"{app_url}/replay/{second_match}")
    assert _verdict(page) == "fail"
    codes = [li.get_attribute("data-code") for li in page.query_selector_all("#verified li")]
    assert codes == ["not_consistent"]
    ctx.close()
