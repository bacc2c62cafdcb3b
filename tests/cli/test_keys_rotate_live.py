"""`matcha keys rotate` takes effect in a running API without a restart: within a
few seconds its answers are signed with the new key, `GET /api/keys` lists both, and
what the old key signed keeps verifying."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_server import Api, running_app

pytestmark = pytest.mark.slow


def _resign_receipt(api: Api, ladder_name: str) -> dict[str, object]:
    ann, bob = api.register(f"ann-{ladder_name}"), api.register(f"bob-{ladder_name}")
    ladder = api.ladder(ladder_name, "duel")
    match_id = api.start_match(ladder, [ann["token"], bob["token"]], [ann["id"], bob["id"]])
    alice = ann
    done = api.call("POST", f"/api/matches/{match_id}/resign", alice["token"], json={})
    assert isinstance(done, dict)
    receipt = done["receipt"]
    assert isinstance(receipt, dict)
    return receipt


def test_given_a_running_api_when_the_keys_are_rotated_then_it_signs_with_the_new_key_at_once(
    database_url: str,
    redis_server_url: str,
    redis_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MATCHA_DATA_DIR", str(tmp_path))  # as matcha run points it
    with running_app(database_url, redis_server_url, redis_prefix) as api:
        before = _resign_receipt(api, "Before")
        [old] = [k["key_id"] for k in httpx.get(api.base + "/api/keys").json()["keys"]]
        assert before["key_id"] == old

        env = {**os.environ, "MATCHA_DATA_DIR": str(tmp_path)}
        rotated = subprocess.run(
            [sys.executable, "-m", "service.cli", "keys", "rotate"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert rotated.returncode == 0, rotated.stderr
        assert f"retired key {old}" in rotated.stdout and "no restart" in rotated.stdout
        new = rotated.stdout.split("now signing with ", 1)[1].split()[0]

        deadline = time.monotonic() + 15
        while {k["key_id"] for k in httpx.get(api.base + "/api/keys").json()["keys"]} != {old, new}:
            assert time.monotonic() < deadline, "the running API never loaded the new keyring"
            time.sleep(0.1)  # a poll of the API, bounded by the deadline
        after = _resign_receipt(api, "After")
        assert after["key_id"] == new

        # The old receipt still holds, checked by the same running API.
        checked = httpx.post(
            f"{api.base}/api/matches/{before['match_id']}/receipts/check",
            json={"receipts": [before]},
            timeout=10,
        )
        assert checked.status_code == 200, checked.text
        assert checked.json()["consistent"] is True, checked.text
