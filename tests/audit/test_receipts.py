"""Receipts from a real match, checked offline with ``matcha verify``: only the
record file, the receipt files and the public keys; no database, no service."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from audit_api import Api, admin_token
from click.testing import CliRunner
from harness import Account
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.bots import random_bot
from service.bots.seat_view import bot_request
from service.evidence.keys import rotate
from service.settings import ApiSettings, DatabaseSettings, RedisSettings, Settings
from service.verify import verify

pytestmark = pytest.mark.anyio


def settings_for(database_url: str, redis_url: str, prefix: str, token: str) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url, migrate_on_start=False),
        redis=RedisSettings(url=redis_url, prefix=prefix),
        api=ApiSettings(admin_token=token, admin_name="admin"),
    )


class Service:
    """Starts (and restarts) the API on the test's database and keys."""

    def __init__(self, settings: Settings, token: str) -> None:
        self.settings, self.token = settings, token

    def __call__(self) -> Any:
        return AsyncTestClient(create_app(self.settings))


@pytest.fixture
def service(keys: Any, database_url: str, redis_server_url: str, redis_prefix: str) -> Service:
    token = admin_token()
    return Service(settings_for(database_url, redis_server_url, redis_prefix, token), token)


async def play(
    api: Api,
    match_id: str,
    seats: tuple[Account, Account],
    receipts: list[dict[str, Any]],
    *,
    commands: int | None = None,
) -> None:
    """Random bots play (``commands`` of them, or to the end); every answer's receipt kept."""
    rng = random.Random(3)
    sent = 0
    while commands is None or sent < commands:
        views = [await api.view(match_id, s) for s in seats]
        if views[0]["result"] is not None:
            return
        for seat in (0, 1):
            request = bot_request(views[seat], random_bot, rng)
            if request is None:
                continue
            route, body = request
            body["expected_version"] = views[seat]["version"]
            response = await api.client.post(
                f"/api/matches/{match_id}/{route}", json=body, headers=seats[seat].auth
            )
            assert response.status_code == 200, response.text
            answer = response.json()
            assert answer["receipt"]["version"] == answer["version"]
            receipts.append(answer["receipt"])
            sent += 1
            break


def run_verify(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(verify, list(args))
    return result.exit_code, result.output


async def finished_with_receipts(
    service: Service, tmp_path: Path
) -> tuple[Path, Path, list[dict[str, Any]]]:
    receipts: list[dict[str, Any]] = []
    async with service() as client:
        api = Api(client, service.token)
        match_id, a, b = await api.new_match()
        await play(api, match_id, (a, b), receipts)
        record = await client.get(f"/api/matches/{match_id}/record")
        assert record.status_code == 200, record.text
        keys = await client.get("/api/keys")
    record_file = tmp_path / "record.json"
    record_file.write_bytes(record.content)
    keys_file = tmp_path / "keys.json"
    keys_file.write_bytes(keys.content)
    return record_file, keys_file, receipts


async def test_a_receipt_from_a_real_match_verifies_offline_with_only_the_public_key(
    service: Service, tmp_path: Path
) -> None:
    record_file, keys_file, receipts = await finished_with_receipts(service, tmp_path)
    held = tmp_path / "receipts.jsonl"
    held.write_text("".join(json.dumps(r) + "\n" for r in receipts))
    one = tmp_path / "one-receipt.json"
    one.write_text(json.dumps(receipts[len(receipts) // 2]))
    # A process of its own, with no database and no service to ask.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MATCHA_", "DATABASE"))}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "service.cli",
            "verify",
            str(record_file),
            str(held),
            str(one),
            "--keys",
            str(keys_file),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified: the record holds up" in done.stdout
    assert done.stdout.count(" holds\n") == len(receipts) + 1  # every receipt, one by one
    assert "ok       receipt: version" in done.stdout


async def test_a_receipt_with_one_bit_changed_does_not_verify(
    service: Service, tmp_path: Path
) -> None:
    record_file, keys_file, receipts = await finished_with_receipts(service, tmp_path)
    receipt = receipts[len(receipts) // 2]
    for field in ("signature", "blinded_hash", "server_time"):
        raw = bytearray(json.dumps(receipt).encode())
        value = receipt[field].encode()
        start = raw.index(value)
        raw[start + 3] ^= 0x01  # one bit of that field
        flipped = tmp_path / f"flipped-{field}.json"
        flipped.write_bytes(bytes(raw))
        code, out = run_verify(str(record_file), str(flipped), "--keys", str(keys_file))
        assert code == 1, out
        assert "PROBLEM  flipped" in out and "does not verify" in out
    # and one bit of the record itself: its final receipt no longer signs it
    record = json.loads(record_file.read_text())
    record["events"][3]["actor"] = record["events"][3]["actor"][:-1] + "x"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(record))
    code, out = run_verify(str(tampered), "--keys", str(keys_file))
    assert code == 1 and "hash does not match" in out, out


async def test_a_key_rotation_keeps_old_receipts_verifying(
    service: Service, keys: Any, tmp_path: Path
) -> None:
    receipts: list[dict[str, Any]] = []
    async with service() as client:
        api = Api(client, service.token)
        match_id, a, b = await api.new_match()
        await play(api, match_id, (a, b), receipts, commands=6)
    old_key = receipts[0]["key_id"]
    retired, new = rotate(keys.key_path, keys.keyring_path)
    assert retired.key_id == old_key != new.key_id
    async with service() as client:  # a restart: the service now signs with the new key
        api = Api(client, service.token)
        await play(api, match_id, (a, b), receipts)  # on top of heads the old key signed
        record = await client.get(f"/api/matches/{match_id}/record")
        published = (await client.get("/api/keys")).json()
    assert {r["key_id"] for r in receipts} == {old_key, new.key_id}
    assert [k["key_id"] for k in published["keys"]] == [new.key_id, old_key]
    assert published["keys"][1]["retired_at"]
    (tmp_path / "record.json").write_bytes(record.content)
    (tmp_path / "keys.json").write_text(json.dumps(published))
    (tmp_path / "receipts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in receipts))
    code, out = run_verify(
        str(tmp_path / "record.json"),
        str(tmp_path / "receipts.jsonl"),
        "--keys",
        str(tmp_path / "keys.json"),
    )
    assert code == 0, out
    # without the retired key, the old receipts are named as unverifiable
    only_new = {"keys": [k for k in published["keys"] if k["key_id"] == new.key_id]}
    (tmp_path / "new-only.json").write_text(json.dumps(only_new))
    code, out = run_verify(
        str(tmp_path / "record.json"),
        str(tmp_path / "receipts.jsonl"),
        "--keys",
        str(tmp_path / "new-only.json"),
    )
    assert code == 1 and "a key this keyring does not hold" in out, out


async def test_the_service_refuses_an_imported_record_whose_receipt_it_did_not_sign(
    service: Service, tmp_path: Path
) -> None:
    record_file, _, _ = await finished_with_receipts(service, tmp_path)
    record = json.loads(record_file.read_text())
    forged = json.loads(record_file.read_text())
    forged["receipt"]["signature"] = "A" * 86 + "=="
    async with service() as client:
        honest = (await client.post("/api/records/check", json=record)).json()
        refused = (await client.post("/api/records/check", json=forged)).json()
    assert honest["ok"] is True, honest["problems"]
    assert refused["ok"] is False and refused["frames"] == []
    assert any("does not verify" in p for p in refused["problems"])


async def test_a_match_end_is_checkpointed_by_the_running_service(service: Service) -> None:
    import anyio

    async with service() as client:
        api = Api(client, service.token)
        match_id, a, b = await api.new_match()
        await play(api, match_id, (a, b), [])
        proof = None
        with anyio.fail_after(30):  # the checkpointer runs within MIN_GAP_S of the end
            while proof is None:
                answer = await client.get(f"/api/matches/{match_id}/checkpoint")
                if answer.status_code == 200:
                    proof = answer.json()
                else:
                    assert answer.json()["code"] == "not_checkpointed"
                    await anyio.sleep(0.2)
        record = (await client.get(f"/api/matches/{match_id}/record")).json()
    assert proof["leaf"][1] == len(record["events"])  # the final version
    assert record["checkpoint"]["checkpoint"]["sequence"] >= 1


async def test_receipts_presented_with_a_dispute_are_checked_by_the_admins_audit(
    service: Service,
) -> None:
    receipts: list[dict[str, Any]] = []
    async with service() as client:
        api = Api(client, service.token)
        match_id, a, b = await api.new_match()
        await play(api, match_id, (a, b), receipts)
        held = [r for r in receipts if r["match_id"] == match_id][:5]
        filed = await client.post(
            f"/api/matches/{match_id}/disputes",
            json={"reason": "the log was cut", "receipts": held},
            headers=a.auth,
        )
        assert filed.status_code == 201, filed.text
        audit = (await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)).json()
        assert audit["evidence"]["receipts"] == len(held), audit["evidence"]
        assert audit["verdict"]["consistent"], audit["verdict"]
        # The other player and spectators see neither the reason nor the receipts.
        log = (await api.get(f"/api/matches/{match_id}/events", b)).json()
        shown = next(e["event"] for e in log if e["event"]["type"] == "dispute_filed")
        assert shown["receipts"] is None and shown["reason"] is None
        # A forged receipt presented in a dispute is named by the audit.
        forged = dict(held[0], signature=held[1]["signature"])
        second = await client.post(
            f"/api/matches/{match_id}/disputes",
            json={"reason": "again", "receipts": [forged]},
            headers=b.auth,
        )
        assert second.status_code == 201, second.text
        audit = (await api.get(f"/api/admin/matches/{match_id}/audit", api.admin)).json()
        assert audit["evidence"]["status"] == "inconsistent", audit["evidence"]
        assert not audit["verdict"]["consistent"]


async def test_given_a_record_with_a_changed_deal_card_verify_names_the_problem_in_the_games_words(
    service: Service, tmp_path: Path
) -> None:
    record_file, keys_file, _ = await finished_with_receipts(service, tmp_path)
    record = json.loads(record_file.read_text())
    deal = next(e for e in record["events"] if e["event"]["type"] == "hand_dealt")
    hand = deal["event"]["hands"][0]
    hand[0] = next(c for c in ("M1", "C2", "W3", "S4", "Z1", "Z2") if c not in hand)
    tampered = tmp_path / "changed-deal.json"
    tampered.write_text(json.dumps(record))
    code, out = run_verify(str(tampered), "--keys", str(keys_file))
    assert code == 1, out
    assert "PROBLEM" in out and "hand_dealt" in out, out
    assert "ValueError" not in out and "tuple.index" not in out and "Traceback" not in out, out
