"""What signatures cost: appends/s and the API's commands/s, signed against unsigned.

* store: the bench_store workload (CONCURRENCY matches at once, 3 events per
  append, warm head cache) on one database, ``EventStore`` with the service's
  signer and verifier against the same store without them, alternating for
  ROUNDS rounds (median of each): ``signed_append_ratio`` in store.json.
* api: bench_api's bots over real HTTP (uvicorn subprocess), the same run with
  signing and with ``MATCHA_BENCH_UNSIGNED=1``, alternating:
  ``signed_commands_ratio`` in api.json (closed loop by default:
  $MATCHA_BENCH_THINK_MS=0, so it measures the server's ceiling).

The goal is a ratio of at least 0.9 (at most 10 % fewer with signing).

    .venv/bin/python -m bench evidence
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench import bench_api, bench_store
from bench.results_file import merge_results
from service.evidence.keys import Keyring, SigningKey
from service.store.db import open_pool, scratch_database, with_database
from service.store.events import EventStore
from service.store.migrate import apply_migrations

ROUNDS = int(os.environ.get("MATCHA_BENCH_ROUNDS", "3"))
API_SECONDS = float(os.environ.get("MATCHA_BENCH_EVIDENCE_API_SECONDS", "8"))
API_ROUNDS = int(os.environ.get("MATCHA_BENCH_EVIDENCE_API_ROUNDS", "2"))
GOAL = 0.9
HERE = Path(__file__).parent / "results"


async def _append_rate(url: str, signer: SigningKey | None) -> float:
    pool = await open_pool(url, min_size=bench_store.CONCURRENCY, max_size=bench_store.CONCURRENCY)
    keyring = None if signer is None else Keyring([signer.public()])
    store = EventStore(pool, signer=signer, verifier=keyring)
    events = bench_store._command_events()
    run = uuid.uuid4().hex[:6]

    async def worker(n: int, running: Callable[[], bool]) -> int:
        match_id = f"ev-{run}-{n}"
        version, appended = 0, 0
        while running():
            result = await store.append(
                match_id, version, events, actor="bench", seed="ab" * 32 if version == 0 else None
            )
            version = result.last_version
            appended += 1
        return appended

    try:
        return await bench_store._timed(worker)
    finally:
        await pool.close()


async def _store(server_url: str) -> dict[str, object]:
    signer = SigningKey.generate()
    with scratch_database(server_url, "bench_evidence_") as name:
        url = with_database(server_url, name)
        apply_migrations(url)
        signed, unsigned = [], []
        for n in range(ROUNDS):  # alternating which side goes first: the table grows
            if n % 2:
                signed.append(await _append_rate(url, signer))
                unsigned.append(await _append_rate(url, None))
            else:
                unsigned.append(await _append_rate(url, None))
                signed.append(await _append_rate(url, signer))
    s, u = statistics.median(signed), statistics.median(unsigned)
    return {
        "signed_appends_per_s": round(s, 1),
        "unsigned_appends_per_s": round(u, 1),
        "signed_append_ratio": round(s / u, 3),
        "goal_signed_append_ratio": GOAL,
    }


def _api_rate(server_url: str, *, signed: bool, key_dir: Path) -> tuple[float, float]:
    """(accepted commands per second, server CPU ms per accepted command)."""
    extra = {"MATCHA_DATA_DIR": str(key_dir), "MATCHA_BENCH_UNSIGNED": "0" if signed else "1"}
    with bench_api.bench_server(server_url, "ev", extra) as (base_url, pid, name):
        rec = asyncio.run(bench_api._drive(base_url, pid, name))
    commands = max(len(rec.command_ms), 1)
    return len(rec.command_ms) / bench_api.SECONDS, rec.server_cpu_s * 1000 / commands


def _api(server_url: str) -> dict[str, object]:
    bench_api.SECONDS = API_SECONDS
    if "MATCHA_BENCH_THINK_MS" not in os.environ:
        bench_api.THINK_MS = 0.0  # closed loop: the server's ceiling, where a cost shows
    signed: list[float] = []
    unsigned: list[float] = []
    cpu: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="matcha-bench-keys-") as key_dir:
        for n in range(API_ROUNDS):
            for side in (True, False) if n % 2 else (False, True):
                rate, ms = _api_rate(server_url, signed=side, key_dir=Path(key_dir))
                (signed if side else unsigned).append(rate)
                cpu[side].append(ms)
    s, u = statistics.median(signed), statistics.median(unsigned)
    cs, cu = statistics.median(cpu[True]), statistics.median(cpu[False])
    return {
        "signed_commands_per_s": round(s, 1),
        "unsigned_commands_per_s": round(u, 1),
        "signed_commands_ratio": round(s / u, 3),
        "goal_signed_commands_ratio": GOAL,
        # Less sensitive to what else runs on a shared machine than a rate:
        "signed_server_cpu_ms_per_command": round(cs, 3),
        "unsigned_server_cpu_ms_per_command": round(cu, 3),
        "signed_server_cpu_ratio": round(cu / cs, 3) if cs else None,
        "signed_commands_note": f"closed loop, {bench_api.MATCHES} matches, {API_ROUNDS} rounds"
        f" of {API_SECONDS:g} s per side, alternating; median",
    }


def main() -> dict[str, object]:
    server_url = os.environ.get(
        "MATCHA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    store = asyncio.run(_store(server_url))
    at = datetime.now(UTC).isoformat(timespec="seconds")
    store["signed_measured_at"] = at
    print(f"{'':34}{'signed':>10}{'unsigned':>10}{'ratio':>8}")
    print(f"{'EventStore.append, appends/s':34}{store['signed_appends_per_s']:>10}"
          f"{store['unsigned_appends_per_s']:>10}{store['signed_append_ratio']:>8}")  # fmt: skip
    merge_results(HERE / "store.json", store)
    api = _api(server_url)
    api["signed_measured_at"] = at
    print(f"{'API commands/s':34}{api['signed_commands_per_s']:>10}"
          f"{api['unsigned_commands_per_s']:>10}{api['signed_commands_ratio']:>8}")  # fmt: skip
    cpu = (
        f"{api['signed_server_cpu_ms_per_command']:>10}"
        f"{api['unsigned_server_cpu_ms_per_command']:>10}{api['signed_server_cpu_ratio']:>8}"
    )
    print(f"{'API server CPU ms per command':34}{cpu}")
    print(f"goal: both ratios >= {GOAL} (at most 10 % fewer with signatures)")
    merge_results(HERE / "api.json", api)
    return {**store, **api}


if __name__ == "__main__":
    main()
