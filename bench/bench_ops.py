"""ops: how long `matcha run` takes to start and stop, and what the probes cost.

Starts `matcha run` on a fresh temporary data folder (cold: initdb, first
migrations), then again on the same folder (warm), each time timing the
banner and the stop after SIGINT; in between it times `/healthz`, `/readyz`
and `/metrics` one request after another over one keep-alive connection.
Writes bench/results/ops.json.

    .venv/bin/python -m bench.bench_ops
"""

from __future__ import annotations

import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench.results_file import merge_results
from service.embedded import free_port

RESULTS = Path(__file__).parent / "results" / "ops.json"
REQUESTS = int(os.environ.get("MATCHA_BENCH_REQUESTS", "300"))
BANNER = "Matcha is running"


def _start(data: Path, port: int, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "MATCHA_ADMIN_TOKEN")
    }
    out = log.with_suffix(".out")
    started = time.perf_counter()
    with out.open("wb") as stdout, log.open("wb") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "run",
                "--data-dir",
                str(data),
                "--port",
                str(port),
            ],
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    while BANNER not in out.read_text(errors="replace"):
        if proc.poll() is not None or time.perf_counter() - started > 180:
            proc.kill()
            raise RuntimeError(f"matcha run did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    return proc, time.perf_counter() - started


def _stop(proc: subprocess.Popen[bytes]) -> float:
    started = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    proc.wait(120)
    return time.perf_counter() - started


def _latencies(client: httpx.Client, path: str, n: int) -> dict[str, float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    times.sort()
    return {
        "requests": n,
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(times[int(0.99 * (n - 1))], 2),
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="matcha-bench-ops-") as tmp:
        data = Path(tmp) / "var"
        port = free_port()
        proc, cold_start = _start(data, port, Path(tmp) / "cold.log")
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
                probes = {
                    "/healthz": _latencies(client, "/healthz", REQUESTS),
                    "/readyz": _latencies(client, "/readyz", REQUESTS),
                    "/metrics": _latencies(client, "/metrics", max(20, REQUESTS // 6)),
                }
        finally:
            cold_stop = _stop(proc)
        proc, warm_start = _start(data, port, Path(tmp) / "warm.log")
        warm_stop = _stop(proc)

    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "matcha_run_s": {
            "cold_start": round(cold_start, 2),
            "cold_stop": round(cold_stop, 2),
            "warm_start": round(warm_start, 2),
            "warm_stop": round(warm_stop, 2),
        },
        "probes": probes,
    }
    print("matcha run (embedded PostgreSQL + Redis + API + worker)")
    print(f"{'':12}{'start s':>10}{'stop s':>10}")
    print(f"{'cold':12}{cold_start:>10.2f}{cold_stop:>10.2f}")
    print(f"{'warm':12}{warm_start:>10.2f}{warm_stop:>10.2f}")
    print(f"\n{'endpoint':12}{'requests':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for path, row in probes.items():
        print(f"{path:12}{row['requests']:>10}{row['p50_ms']:>10.2f}{row['p99_ms']:>10.2f}")
    merge_results(RESULTS, result)
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
