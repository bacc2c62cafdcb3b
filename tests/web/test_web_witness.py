"""``python -m service.evidence.witness`` against the running service over HTTP:
it pins nothing but the keys it is given, countersigns each new checkpoint that
extends the last one it witnessed, and says so in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from test_web_verified import _finished_and_checkpointed
from web_server import Api

from service.evidence.witness import witness_command


def test_a_witness_follows_the_services_checkpoints_over_http(
    api: Api, app_url: str, tmp_path: Path
) -> None:
    # Given the service's keys saved once, and a first match checkpointed
    (tmp_path / "keys.json").write_text(json.dumps(api.call("GET", "/api/keys")))
    _finished_and_checkpointed(api, "Witnessed one")
    args = [
        "--service", app_url,
        "--keys", str(tmp_path / "keys.json"),
        "--key", str(tmp_path / "witness-key.pem"),
        "--out", str(tmp_path / "witness.jsonl"),
    ]  # fmt: skip
    runner = CliRunner()
    # When the witness runs a round, then after another match a second one
    first = runner.invoke(witness_command, args)
    _, later = _finished_and_checkpointed(api, "Witnessed two")
    second = runner.invoke(witness_command, args)
    again = runner.invoke(witness_command, args)
    # Then it countersigned both checkpoints, and nothing the third time
    assert first.exit_code == 0, first.output
    assert second.exit_code == 0, second.output
    assert f"witnessed checkpoint {later['sequence']}" in second.output
    assert again.exit_code == 0 and "unchanged" in again.output
    lines: list[dict[str, Any]] = [
        json.loads(x) for x in (tmp_path / "witness.jsonl").read_text().splitlines()
    ]
    assert [x["checkpoint"]["sequence"] for x in lines][-1] == later["sequence"]
    assert len(lines) == 2
