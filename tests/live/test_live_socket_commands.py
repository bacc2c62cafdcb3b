"""Seats send their commands on the live socket: the same core, the same rules,
the same answers as over HTTP (docs/live.md "Commands on the socket")."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
from harness import Account
from live_harness import Driver, SeatSocket, expected_live_log

from schemas.events import MatchCreated
from service.bots.seat_view import move_request
from service.store import EventStore

pytestmark = pytest.mark.anyio


def _fixed_seed(monkeypatch: pytest.MonkeyPatch, seed: str) -> None:
    """Every match created from now on deals from ``seed``, seat 0 dealing first."""

    class Fixed:
        @staticmethod
        def token_hex(_: int) -> str:
            return seed

        @staticmethod
        def randbelow(_: int) -> int:
            return 0

    monkeypatch.setattr("service.matches.core.secrets", Fixed)


def _comparable(rows: list[Any]) -> list[Any]:
    """The events of a log without who played it (ids, the match's own id, and the
    commitment to the seed, which is bound to them)."""
    out = []
    for row in rows:
        event = row.event
        if isinstance(event, MatchCreated):
            event = msgspec.structs.replace(
                event, match_id="", players=("", ""), ladder_id=None, seed_commitment=""
            )
        out.append(msgspec.to_builtins(event))
    return out


def _without_instance(problem: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in problem.items() if k != "instance"}


async def _socket_step(
    sockets: list[SeatSocket], rng: random.Random
) -> tuple[int, dict[str, Any]] | None:
    """The next command, chosen exactly as ``Driver.step`` chooses it (the same rng
    draws), from views read on the sockets; None when the match is over."""
    for seat, sock in enumerate(sockets):
        answer = await sock.ask({"kind": "view"})
        assert answer["kind"] == "view", answer
        view = answer["view"]
        if view["result"] is not None:
            return None
        moves = [m for m in view["legal_moves"] if m["type"] != "resign"]
        if not moves:
            continue
        request = move_request(rng.choice(moves))
        assert request is not None
        path, body = request
        return seat, {"kind": path, **body, "expected_version": view["version"]}
    raise AssertionError("nobody may act, yet the match is not over")


async def test_given_a_seeded_match_when_played_entirely_over_the_sockets_with_a_drop_a_resend_and_refusals_then_its_log_equals_the_same_match_played_over_http(  # noqa: E501
    server: str, driver: Driver, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fixed_seed(monkeypatch, "5e" * 32)
    match_id, a, b = await driver.new_match()
    base = f"ws://{server}/api/matches/{match_id}/ws"
    sockets = [await SeatSocket(base, a.token).open(), await SeatSocket(base, b.token).open()]
    rng = random.Random(23)
    checked = {"resend": False, "stale": False, "other_seat": False}
    for step in range(3000):
        chosen = await _socket_step(sockets, rng)
        if chosen is None:
            break
        seat, message = chosen
        sock = sockets[seat]
        if step >= 12 and not checked["other_seat"] and message["kind"] in ("play", "pass"):
            # A command for the seat not to move, sent by that seat: the rules refuse
            # it exactly as HTTP does, and the log is unchanged.
            other, account = sockets[1 - seat], (a, b)[1 - seat]
            before = len(await store.load(match_id))
            refused = await other.ask({**message, "id": "not-mine"})
            assert refused["kind"] == "refused" and refused["id"] == "not-mine"
            body = {k: v for k, v in message.items() if k not in ("kind", "id")}
            r = await driver.http.post(
                f"/api/matches/{match_id}/{message['kind']}", json=body, headers=account.auth
            )
            assert r.status_code == refused["problem"]["status"] >= 400
            assert _without_instance(refused["problem"]) == _without_instance(r.json())
            assert refused["problem"]["instance"] == f"/api/matches/{match_id}/ws"
            assert len(await store.load(match_id)) == before
            checked["other_seat"] = True
        if step == 20:
            # A stale expected version is refused (409), as HTTP refuses it.
            before = len(await store.load(match_id))
            stale = {**message, "expected_version": message["expected_version"] - 1}
            refused = await sock.ask({**stale, "id": "stale"})
            assert refused["kind"] == "refused"
            assert refused["problem"]["status"] == 409, refused
            assert refused["problem"]["code"] == "version_conflict"
            assert len(await store.load(match_id)) == before
            checked["stale"] = True
        key = f"k-{step}"
        ack = await sock.ask({**message, "idempotency_key": key})
        assert ack["kind"] == "ack", ack
        assert ack["version"] > message["expected_version"]
        assert ack["receipt"]["version"] == ack["version"]
        assert ack["view"]["version"] == ack["version"]
        if step == 30:
            # The socket drops after the ack: the seat reconnects where its frames
            # stopped, resends the same command, and gets the same ack: nothing appended.
            rows = await store.load(match_id)
            await sock.until_version(ack["version"])
            await sock.drop()
            seen = sock.versions[-1]
            sock = sockets[seat] = SeatSocket(base, sock.token, frames=sock.frames)
            await sock.open(since=seen)
            again = await sock.ask({**message, "idempotency_key": key, "id": "resent"})
            assert again["kind"] == "ack" and again["replayed"] is True
            assert (again["version"], again["receipt"]) == (ack["version"], ack["receipt"])
            assert await store.load(match_id) == rows
            checked["resend"] = True
    else:
        raise AssertionError("the match did not end")
    assert all(checked.values()), checked

    stored = await store.load(match_id)
    for viewer, sock in enumerate(sockets):
        await sock.until_version(stored[-1].version)
        assert sock.versions == list(range(1, stored[-1].version + 1)), "a gap or a duplicate"
        entries = [f["entry"] for f in sock.frames if f["kind"] == "event"]
        assert entries == expected_live_log(stored, viewer)
        await sock.drop()

    # The same seed and the same choices over HTTP: the same log.
    over_http, c, d = await driver.new_match()
    await driver.play_out(over_http, (c, d), random.Random(23))
    assert _comparable(await store.load(over_http)) == _comparable(stored)


async def test_given_a_spectator_or_a_stranger_when_they_send_a_command_on_the_socket_then_it_is_refused_with_the_http_problem_and_the_log_is_unchanged(  # noqa: E501
    server: str, driver: Driver, store: EventStore
) -> None:
    match_id, a, b = await driver.new_match()
    views = [await driver.view(match_id, seat) for seat in (a, b)]
    view = next(v for v in views if any(m["type"] != "resign" for m in v["legal_moves"]))
    base = f"ws://{server}/api/matches/{match_id}/ws"
    stranger: Account = await driver.register()
    move = next(m for m in view["legal_moves"] if m["type"] != "resign")
    request = move_request(move)
    assert request is not None
    path, body = request
    message = {"kind": path, **body, "expected_version": view["version"]}
    before = await store.load(match_id)

    anonymous = await SeatSocket(base, None).open()
    refused = await anonymous.ask(dict(message))
    assert refused["kind"] == "refused"
    assert (refused["problem"]["status"], refused["problem"]["code"]) == (401, "unauthorized")

    watcher = await SeatSocket(base, stranger.token).open()
    refused = await watcher.ask(dict(message))
    r = await driver.http.post(f"/api/matches/{match_id}/{path}", json=body,
                               headers=stranger.auth)  # fmt: skip
    assert r.status_code == 403
    assert _without_instance(refused["problem"]) == _without_instance(r.json())

    # A message that is no command is refused as HTTP refuses a bad body, naming its id.
    refused = await watcher.ask({"kind": "play", "card": "nope", "target": "number"})
    assert refused["problem"]["status"] == 400
    assert refused["problem"]["code"] == "validation_error"
    assert await store.load(match_id) == before
    # A seat's view on its socket, at the version it knows or not, is the HTTP view.
    seat = await SeatSocket(base, a.token).open()
    for known in (None, views[0]["version"]):
        answer = await seat.ask({"kind": "view", "version": known})
        assert answer["kind"] == "view" and answer["view"] == views[0]
    for sock in (anonymous, watcher, seat):
        await sock.drop()
